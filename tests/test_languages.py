"""The language table: coverage of both benchmarks, wiki mappings, --lang resolution, validation."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from m4build.errors import ExitCode, InputFileError, UsageError
from m4build.languages import LanguageRegistry, load_languages
from m4build.resources import data_path

# The file names of worldcuisines/vqa-v1.1 small_eval_task1 ({code}_small_eval_task1.jsonl).
WORLDCUISINES_CODES = {
    "ar", "az", "bn", "cs", "en", "es", "fr", "hi", "id_casual", "id_formal", "it", "ja_casual",
    "ja_formal", "jv_krama", "jv_ngoko", "ko_casual", "ko_formal", "mr", "nan", "nan_spoken",
    "ru_casual", "ru_formal", "sc", "si_formal_spoken", "su_loma", "th", "tl", "yo", "yue", "zh_cn",
}  # fmt: skip


@pytest.fixture(scope="module")
def registry() -> LanguageRegistry:
    return load_languages()


def codes(languages) -> list[str]:
    return [lang.code for lang in languages]


def test_the_packaged_table_is_the_default(registry):
    path = data_path("corpora", "languages.yaml")
    assert path.is_file()
    assert load_languages(path).all() == registry.all()
    assert load_languages() is registry  # cached: every command reads it once


def test_worldcuisines_codes_are_exactly_the_datasets(registry):
    assert set(codes(registry.all("worldcuisines"))) == WORLDCUISINES_CODES


def test_cvqa_has_39_language_country_subsets(registry):
    cvqa = registry.all("cvqa")
    assert len(cvqa) == 39
    assert len({lang.cvqa_subset[0] for lang in cvqa}) == 31
    assert len({lang.country for lang in cvqa}) == 30
    spanish = [lang for lang in cvqa if lang.cvqa_subset[0] == "Spanish"]
    assert {lang.country for lang in spanish} == {"AR", "CL", "CO", "EC", "MX", "ES", "UY"}
    assert codes(spanish) == ["es_ar", "es_cl", "es_co", "es_ec", "es_es", "es_mx", "es_uy"]
    urdu = [lang for lang in cvqa if lang.cvqa_subset[0] == "Urdu"]
    assert [(lang.code, lang.cvqa_subset) for lang in urdu] == [
        ("ur_in", ("Urdu", "India")),
        ("ur_pk", ("Urdu", "Pakistan")),
    ]


def test_every_cvqa_code_is_language_then_country(registry):
    for lang in registry.all("cvqa"):
        assert lang.code == f"{lang.base}_{lang.country.lower()}"
        assert lang.bcp47.split("-")[0] == lang.base


def test_english_is_present_and_goes_to_enwiki(registry):
    english = registry.get("en")
    assert (english.wiki, english.dbname, english.script) == ("en", "enwiki", "Latn")


@pytest.mark.parametrize(
    ("code", "wiki"),
    [
        ("yue", "zh-yue"),
        ("nan", "zh-min-nan"),
        ("nan_spoken", "zh-min-nan"),
        ("arz_eg", "arz"),
        ("jv_krama", "jv"),
        ("jv_ngoko", "jv"),
        ("jv_id", "jv"),
        ("su_loma", "su"),
        ("su_id", "su"),
        ("sc", "sc"),
        ("tl", "tl"),
        ("fil_ph", "tl"),
        ("no_no", "no"),
        ("br_fr", "br"),
        ("min_id", "min"),
        ("om_et", "om"),
        ("si_formal_spoken", "si"),
        ("si_lk", "si"),
        ("mn_mn", "mn"),
        ("zh_cn", "zh"),
        ("zh_sg", "zh"),
    ],
)
def test_wiki_editions(registry, code, wiki):
    assert registry.get(code).wiki == wiki


def test_database_names_come_from_the_subdomain(registry):
    assert registry.get("yue").dbname == "zh_yuewiki"
    assert registry.get("nan").dbname == "zh_min_nanwiki"
    assert registry.get("es_mx").dbname == "eswiki"


def test_only_chinese_requests_a_variant(registry):
    variants = {lang.code: lang.variant for lang in registry.all() if lang.variant}
    assert variants == {"zh_cn": "zh-cn", "zh_sg": "zh-sg"}


def test_chinese_china_is_one_entry_for_both_benchmarks(registry):
    zh = registry.get("zh_cn")
    assert zh.benchmarks == ("worldcuisines", "cvqa")
    assert zh.cvqa_subset == ("Chinese", "China")
    assert registry.by_cvqa_subset("Chinese", "China") is zh


def test_scripts_follow_the_benchmark_text_not_the_wiki(registry):
    assert (registry.get("nan").script, registry.get("nan").bcp47) == ("Hans", "nan-Hans")
    assert (registry.get("nan_spoken").script, registry.get("nan_spoken").bcp47) == ("Latn", "nan-Latn")
    assert (registry.get("yue").script, registry.get("yue").bcp47) == ("Hant", "yue-Hant")
    assert registry.get("zh_sg").bcp47 == "zh-Hans-SG"
    assert registry.get("ur_pk").bcp47 == "ur-PK"


def test_mismatches_between_text_and_wiki_are_noted(registry):
    for code in ("nan", "nan_spoken", "jv_krama", "jv_ngoko", "arz_eg", "si_formal_spoken", "fil_ph"):
        assert registry.get(code).note, code
    assert "POJ" in registry.get("nan").note


def test_registers_are_a_field_not_a_subtag(registry):
    krama = registry.get("jv_krama")
    assert (krama.register, krama.bcp47, krama.base) == ("krama", "jv", "jv")
    assert registry.get("si_formal_spoken").register == "formal_spoken"
    assert registry.get("su_loma").register == "loma"
    assert registry.get("ja_formal").base == "ja"
    assert registry.get("es_mx").base == "es"


def test_resource_classes(registry):
    assert all(0 <= lang.resource_class <= 5 for lang in registry.all())
    # WorldCuisines' own classes (plot_mapper.yml).
    assert registry.get("nan").resource_class == 0
    assert registry.get("yue").resource_class == 1
    assert registry.get("zh_cn").resource_class == 5
    # A language in both benchmarks has one class.
    assert registry.get("si_lk").resource_class == registry.get("si_formal_spoken").resource_class


def test_resolve_all(registry):
    assert codes(registry.resolve("worldcuisines", "all")) == sorted(WORLDCUISINES_CODES)
    assert len(registry.resolve("cvqa", ["all"])) == 39


def test_resolve_lists_and_comma_strings(registry):
    assert codes(registry.resolve("worldcuisines", "th, jv_krama")) == ["jv_krama", "th"]
    assert codes(registry.resolve("worldcuisines", ["th", "jv_krama"])) == ["jv_krama", "th"]


def test_resolve_expands_a_base_language_within_the_benchmark(registry):
    assert codes(registry.resolve("worldcuisines", "jv")) == ["jv_krama", "jv_ngoko"]
    assert codes(registry.resolve("worldcuisines", "ja")) == ["ja_casual", "ja_formal"]
    assert codes(registry.resolve("cvqa", "ja")) == ["ja_jp"]
    assert len(registry.resolve("cvqa", "es")) == 7
    assert codes(registry.resolve("cvqa", "ur")) == ["ur_in", "ur_pk"]
    assert codes(registry.resolve("cvqa", "zh")) == ["zh_cn", "zh_sg"]
    assert codes(registry.resolve("worldcuisines", "es")) == ["es"]


def test_resolve_deduplicates_and_sorts(registry):
    chosen = registry.resolve("worldcuisines", "jv_ngoko,jv,JV_KRAMA,ar")
    assert codes(chosen) == ["ar", "jv_krama", "jv_ngoko"]


def test_resolve_ignores_case_and_dashes(registry):
    assert codes(registry.resolve("worldcuisines", "zh-CN")) == ["zh_cn"]
    assert codes(registry.resolve("worldcuisines", " Jv-Krama ")) == ["jv_krama"]
    assert codes(registry.resolve("cvqa", "ES-mx")) == ["es_mx"]
    assert registry.get("ZH-cn").code == "zh_cn"


def test_unknown_code_is_refused_with_the_valid_choices(registry):
    with pytest.raises(UsageError) as caught:
        registry.resolve("worldcuisines", "jv_krama,xx_yy")
    message = str(caught.value)
    assert "'xx_yy'" in message
    assert "jv_krama" in message and "si_formal_spoken" in message and "all" in message
    assert "es_mx" not in message  # only this benchmark's choices
    assert caught.value.exit_code == ExitCode.USAGE


def test_typo_gets_a_suggestion(registry):
    with pytest.raises(UsageError, match=r"did you mean es_mx"):
        registry.resolve("cvqa", "es_mex")


def test_code_of_the_other_benchmark_is_refused(registry):
    with pytest.raises(UsageError) as caught:
        registry.resolve("cvqa", "jv_krama")
    message = str(caught.value)
    assert "'jv_krama'" in message and "worldcuisines" in message
    assert "jv_id" in message


def test_unknown_benchmark_is_refused_with_the_benchmarks(registry):
    with pytest.raises(UsageError) as caught:
        registry.resolve("vqa", "all")
    assert "'vqa'" in str(caught.value)
    assert "cvqa" in str(caught.value) and "worldcuisines" in str(caught.value)
    with pytest.raises(UsageError):
        registry.all("vqa")


def test_empty_selection_is_refused(registry):
    with pytest.raises(UsageError, match="no cvqa language selected"):
        registry.resolve("cvqa", " , ")


def test_non_string_selection_says_to_quote(registry):
    # YAML 1.1 reads `lang: [es, no]` as ["es", False].
    with pytest.raises(UsageError, match="quote"):
        registry.resolve("cvqa", ["es", False])


def test_get_unknown_lists_codes(registry):
    with pytest.raises(UsageError) as caught:
        registry.get("klingon")
    assert "'klingon'" in str(caught.value) and "zh_cn" in str(caught.value)


def test_cvqa_subset_lookup(registry):
    assert registry.by_cvqa_subset("Spanish", "Mexico").code == "es_mx"
    assert registry.by_cvqa_subset("Urdu", "Pakistan").code == "ur_pk"
    assert registry.by_cvqa_subset("Egyptian_Arabic", "Egypt").code == "arz_eg"
    # Case, spacing and underscores do not matter: CVQA spells some names with underscores.
    assert registry.by_cvqa_subset("egyptian arabic", " egypt").code == "arz_eg"
    assert registry.by_cvqa_subset("Chinese", "Singapore").code == "zh_sg"
    with pytest.raises(UsageError, match="unknown CVQA subset"):
        registry.by_cvqa_subset("Klingon", "Qo'noS")


# --------------------------------------------------------------------------- validation

GOOD = {
    "code": "es_mx",
    "name": "Spanish (Mexico)",
    "benchmarks": ["cvqa"],
    "wiki": "es",
    "bcp47": "es-MX",
    "script": "Latn",
    "resource_class": 5,
    "country": "MX",
    "cvqa_subset": ["Spanish", "Mexico"],
}


def write_table(tmp_path: Path, *entries: dict, text: str | None = None) -> Path:
    path = tmp_path / "languages.yaml"
    document = {"benchmarks": ["worldcuisines", "cvqa"], "languages": list(entries)}
    path.write_text(text if text is not None else yaml.safe_dump(document), encoding="utf-8")
    return path


def test_a_minimal_valid_table_loads(tmp_path):
    registry = load_languages(write_table(tmp_path, GOOD))
    assert codes(registry.all()) == ["es_mx"]


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        ({"wiki": None}, "missing field(s) wiki"),
        ({"resource_class": 7}, "resource_class"),
        ({"resource_class": True}, "resource_class"),
        ({"wiki": "zh_yuewiki"}, "Wikipedia subdomain"),
        ({"wiki": "https://es.wikipedia.org"}, "Wikipedia subdomain"),
        ({"wiki": False}, "quote it"),
        ({"resouce_class": 5}, "unknown field(s) resouce_class"),
        ({"benchmarks": ["vqa"]}, "benchmarks must be"),
        ({"bcp47": "pt-BR"}, "language subtag is 'es'"),
        ({"bcp47": "es-Cyrl-MX"}, "names script 'Cyrl'"),
        ({"script": "latin"}, "ISO 15924"),
        ({"country": "mx"}, "alpha-2"),
        ({"country": "AR"}, "must end in _{country}"),
        ({"cvqa_subset": ["Spanish"]}, "pair of strings"),
        ({"cvqa_subset": None}, "needs its cvqa_subset"),
        ({"variant": "zh-cn"}, "variant of wiki 'es'"),
        ({"code": "ES MX"}, "code must be"),
    ],
)
def test_bad_entries_are_refused_naming_the_entry(tmp_path, change, expected):
    entry = {key: value for key, value in {**GOOD, **change}.items() if value is not None}
    with pytest.raises(InputFileError) as caught:
        load_languages(write_table(tmp_path, entry))
    assert expected in str(caught.value)
    assert "entry 1" in str(caught.value)
    assert caught.value.exit_code == ExitCode.INPUT


def test_duplicate_codes_are_refused(tmp_path):
    with pytest.raises(InputFileError, match="'es_mx' is listed twice"):
        load_languages(write_table(tmp_path, GOOD, GOOD))


def test_duplicate_cvqa_subsets_are_refused(tmp_path):
    same_subset = {**GOOD, "code": "spa_mx", "bcp47": "spa-MX"}
    with pytest.raises(InputFileError, match="'es_mx' and 'spa_mx' claim the same CVQA subset"):
        load_languages(write_table(tmp_path, GOOD, same_subset))


def test_malformed_yaml_names_the_file_and_line(tmp_path):
    path = write_table(tmp_path, text="benchmarks: [cvqa]\nlanguages:\n  - code: [unclosed\n")
    with pytest.raises(InputFileError, match=r"languages\.yaml at line \d+ is not valid YAML"):
        load_languages(path)


def test_missing_table_is_reported(tmp_path):
    with pytest.raises(InputFileError, match="cannot read the language table"):
        load_languages(tmp_path / "absent.yaml")

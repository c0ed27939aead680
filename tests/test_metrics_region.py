"""RegionScore: RAVENEA parity (substring test, official term lists) and our whole-word default."""

from __future__ import annotations

import json

import pytest

from m4build.errors import UsageError
from m4build.languages import load_languages
from m4build.metrics.checks import MetricInputError
from m4build.metrics.region import known_countries, mentions_country, region_score

RAVENEA_COUNTRIES = ("China", "India", "Indonesia", "Korea", "Mexico", "Nigeria", "Russia", "Spain")


# --- worked examples -------------------------------------------------------------------------------


def test_mean_over_captions_and_per_country():
    captions = {
        "c1": "Steaming Korean bibimbap in a stone bowl.",  # Korea: "Korean" -> 1
        "c2": "A hanok courtyard at dusk.",  # Korea: no country word -> 0
        "c3": "Dancers in Mexican folk dress.",  # Mexico: "Mexican" -> 1
        "c4": "Jollof rice at a Lagos market, Nigeria.",  # Nigeria: "Nigeria" -> 1
    }
    countries = {"c1": "Korea", "c2": "KR", "c3": "Mexico", "c4": "Nigeria"}
    result = region_score(captions, countries)
    # all captions: 3 of 4 = 0.75; South Korea (named "Korea" and "KR"): 1 of 2
    assert result.score == 0.75
    assert {name: score.score for name, score in result.per_country.items()} == {
        "Mexico": 1.0,
        "Nigeria": 1.0,
        "South Korea": 0.5,
    }
    assert result.per_country["South Korea"].code == "KR"
    assert result.per_caption == {"c1": True, "c2": False, "c3": True, "c4": True}
    report = json.loads(json.dumps(result.as_dict()))
    assert report["per_country"]["South Korea"] == {"code": "KR", "captions": 2, "mentioned": 1, "score": 0.5}


@pytest.mark.parametrize(
    ("caption", "country"),
    [
        ("INDIAN CURRY WITH NAAN", "India"),  # case-insensitive
        ("Two Indians celebrating Holi", "India"),  # adjective with a plural -s
        ("Spaniards dancing flamenco", "Spain"),  # demonym with a plural -s
        ("Frenchmen playing pétanque", "France"),  # irregular plural, listed
        ("Cocoa farm in Cote d'Ivoire", "Côte d'Ivoire"),  # accents removed on both sides
        ("Cocoa farm in Côte d’Ivoire", "CI"),  # typographic apostrophe
        ("Tea garden in Türkiye", "Turkey"),
        ("Street food in Trinidad & Tobago", "Trinidad and Tobago"),  # "&" read as "and"
        ("Kimchi from the Republic of Korea", "South Korea"),  # multiword name
        ("A South Korean hanbok", "Korea"),
    ],
)
def test_default_finds_country_terms(caption, country):
    assert mentions_country(caption, country)


@pytest.mark.parametrize(
    ("caption", "country", "ravenea"),
    [
        ("A street market in Indiana", "India", True),  # substring "india"
        ("Indochinese noodle soup", "China", True),  # substring "chinese"
        ("North Korean soldiers on parade", "Korea", True),  # "korean" inside "North Korean"
        ("Nightlife in Seoul", "Korea", True),  # RAVENEA lists the city Seoul
        ("The Beijing opera", "China", True),  # and Beijing (its latest version)
        ("Fishing boats on the Indian Ocean", "India", True),
        ("A Spanish paella", "Spain", False),  # no adjective for Spain in RAVENEA
    ],
)
def test_ravenea_parity_flaws_and_the_default(caption, country, ravenea):
    assert mentions_country(caption, country, mode="ravenea") is ravenea
    assert mentions_country(caption, country) is not ravenea


def test_word_boundaries_tell_niger_from_nigeria():
    # RAVENEA's substring test finds "niger" in "Nigerian"; whole words do not
    assert mentions_country("A Nigerian wedding", "Niger", mode="ravenea")
    assert not mentions_country("A Nigerian wedding", "Niger")
    assert mentions_country("A Nigerian wedding", "Nigeria")
    assert mentions_country("A Nigerien herder", "Niger")


def test_longest_phrase_wins():
    assert mentions_country("North Korean soldiers", "North Korea")
    assert not mentions_country("Highlands of Papua New Guinea", "Guinea")
    assert mentions_country("Highlands of Papua New Guinea", "Papua New Guinea")
    assert not mentions_country("A guinea pig dish from Peru", "Guinea")
    assert not mentions_country("Adobe houses in New Mexico", "Mexico")
    assert not mentions_country("Carnival in the West Indies", "India")
    # a shared term counts for each country that uses it
    assert mentions_country("A Korean tea ceremony", "North Korea")
    assert mentions_country("Congolese rumba", "Republic of the Congo")
    assert mentions_country("Congolese rumba", "DR Congo")


def test_ravenea_mode_reads_the_country_as_its_code_does():
    # RAVENEA splits the country at "_" and matches the term list of that name
    assert mentions_country("Kimchi jjigae in Seoul", "Korea_food", mode="ravenea")
    # a country outside its list is matched by its name alone: "Russian" contains "Russia"
    assert mentions_country("Russian nesting dolls", "Russia", mode="ravenea")
    assert mentions_country("Russian nesting dolls", "Russia")
    with pytest.raises(MetricInputError, match="unknown countries"):
        mentions_country("Kimchi jjigae in Seoul", "Korea_food")


def test_reasoning_is_not_the_caption():
    captions = {"a": "<think>Is this Mexico?</think>A bowl of pho.", "b": "<think>It could be Mexico"}
    countries = {"a": "Mexico", "b": "Mexico"}
    # RAVENEA scores the raw text: both contain "mexico" -> 2 of 2
    assert region_score(captions, countries, mode="ravenea").score == 1.0
    # default: "a" is the caption "A bowl of pho." -> 0; "b" has no caption -> 0, counted
    result = region_score(captions, countries)
    assert result.score == 0.0 and result.no_caption == 1


# --- the term table --------------------------------------------------------------------------------


def test_table_covers_un_members_ravenea_and_cvqa():
    table = known_countries()
    assert sum(country.status == "un-member" for country in table) == 193
    assert all(country.adjectives for country in table)
    for country in RAVENEA_COUNTRIES:
        assert mentions_country(f"Everyday life in {country}", country)
    cvqa_countries = {
        lang.cvqa_subset[1] for lang in load_languages().all("cvqa") if lang.cvqa_subset is not None
    }
    for country in sorted(cvqa_countries):
        assert mentions_country(f"A festival in {country}", country), country


def test_only_documented_terms_are_shared():
    from m4build.metrics.region import _gazetteer

    shared = {" ".join(words) for words, codes in _gazetteer().phrases.items() if len(codes) > 1}
    plain = {term for term in shared if not term.endswith("s") or term == "congolese"}
    assert plain == {"korean", "congo", "congolese", "dominican", "malay"}


# --- bad input -------------------------------------------------------------------------------------


def test_unknown_and_ambiguous_countries_are_refused_with_examples():
    captions = {"a": "x", "b": "x", "c": "x", "d": "x"}
    countries = {"a": "Mexcio", "b": "Narnia", "c": "Congo", "d": None}
    with pytest.raises(MetricInputError) as caught:
        region_score(captions, countries)
    message = str(caught.value)
    assert "2 unknown countries (e.g. a: 'Mexcio' (did you mean Mexico?), b: 'Narnia')" in message
    assert "1 ambiguous countries (e.g. c: 'Congo' (one of CD, CG))" in message
    assert "1 captions without a country (e.g. d: None)" in message
    assert "ISO 3166-1 alpha-2" in message  # the hint


def test_bad_captions_and_ids_are_refused():
    with pytest.raises(MetricInputError) as caught:
        region_score({"a": "", "b": None, "c": float("nan")}, {"a": "India", "b": "India", "c": "India"})
    message = str(caught.value)
    assert "1 empty captions (e.g. a)" in message and "2 missing captions" in message
    with pytest.raises(MetricInputError, match="references without a prediction"):
        region_score({"a": "Indian tea"}, {"a": "India", "b": "India"})
    with pytest.raises(MetricInputError, match="none given"):
        region_score({}, {})
    with pytest.raises(UsageError, match="ravenea"):
        region_score({"a": "Indian tea"}, {"a": "India"}, mode="parity")  # type: ignore[arg-type]

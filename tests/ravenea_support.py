"""A tiny RAVENEA input made by the tests: five drawn images (one exact copy, one re-encoded copy,
one undecodable file), their metadata, and a scripted VLM whose captions point BM25 at known
articles of the embedded Wikipedia sample."""

from __future__ import annotations

import csv
import hashlib
import io
import json
from pathlib import Path

from PIL import Image, ImageDraw

from tests.servers.chat import ChatCall, Reply, answer

CAPTIONS = {
    "matryoshka.png": "Painted Russian matryoshka nesting dolls of wood in decreasing size, a Russian folk craft souvenir.",
    "vines.png": "Grapevine rows with bunches of grapes in a French vineyard, Vitis vines grown for wine making.",
    "squirrel.png": "A red squirrel with a bushy tail eating a nut in an English park, a rodent common in Britain.",
    "dog.png": "I'm sorry, but I can't help with describing this image.",
}
ROWS = [
    # file, country, category, task, shape
    ("matryoshka.png", "Russia", "Art", "cIC", "ellipse"),
    ("vines.png", "France", "Cooking and food", "cIC", "grid"),
    ("squirrel.png", "United Kingdom", "Animals", "cVQA", "triangle"),
    ("dog.png", "United Kingdom", "Animals", "cIC", "bars"),
    ("matryoshka-copy.png", "Russia", "Art", "cIC", "copy"),  # the same bytes as matryoshka.png
    ("squirrel-small.jpg", "United Kingdom", "Animals", "cIC", "reencoded"),  # squirrel.png, resized JPEG
    ("broken.jpg", "Russia", "Art", "cIC", "broken"),  # not an image
]


def _draw(shape: str) -> Image.Image:
    image = Image.new("RGB", (96, 64), (240, 235, 220))
    pen = ImageDraw.Draw(image)
    if shape == "ellipse":
        pen.ellipse([30, 8, 66, 60], fill=(190, 20, 30))
    elif shape == "grid":
        for x in range(0, 96, 12):
            pen.line([x, 0, x, 64], fill=(40, 110, 30), width=4)
    elif shape == "triangle":
        pen.polygon([(10, 60), (48, 4), (86, 60)], fill=(150, 70, 20))
    elif shape == "bars":
        for y in range(0, 64, 16):
            pen.rectangle([0, y, 96, y + 6], fill=(20, 20, 20))
    return image


def encoded(image: Image.Image, format: str = "PNG") -> bytes:
    buffer = io.BytesIO()
    image.save(buffer, format=format)
    return buffer.getvalue()


def make_inputs(folder: Path) -> Path:
    """Write the images and ``metadata.csv`` into ``folder``; returns the metadata path."""
    folder.mkdir(parents=True, exist_ok=True)
    made: dict[str, bytes] = {}
    for name, _country, _category, _task, shape in ROWS:
        if shape == "copy":
            data = made["matryoshka.png"]
        elif shape == "reencoded":
            data = encoded(_draw("triangle").resize((72, 48)), "JPEG")
        elif shape == "broken":
            data = b"\xff\xd8\xff\xe0 not really a JPEG"
        else:
            data = encoded(_draw(shape))
        made[name] = data
        (folder / name).write_bytes(data)
    metadata = folder / "metadata.csv"
    with metadata.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["file_name", "country", "category", "task_type", "question", "options", "answer", "human_captions"])
        for name, country, category, task, _shape in ROWS:
            if task == "cVQA":
                writer.writerow([name, country, category, task, "Which animal is shown?",
                                 json.dumps(["Squirrel", "Cat", "Dog", "Fox"]), 0, ""])  # fmt: skip
            else:
                writer.writerow([name, country, category, task, "", "", "", json.dumps([f"A {country} scene."])])
    return metadata


def image_captions(folder: Path) -> dict[str, str]:
    """Caption per image SHA-256, for the scripted VLM."""
    return {hashlib.sha256((folder / name).read_bytes()).hexdigest(): text for name, text in CAPTIONS.items()}


DOWNSTREAM_CAPTIONS = {
    "matryoshka.png": "Painted nesting dolls from Russia on a shelf.",
    "vines.png": "Grapevines in a vineyard in the French countryside.",
    "squirrel.png": "A squirrel eating a nut in Indiana.",  # names no country of the image: RegionScore 0
}


def scripted_vlm(folder: Path):
    """Cultural captions by image; RAVENEA's cVQA answered "A" (right); cIC captions as above."""
    by_image = image_captions(folder)
    downstream = {hashlib.sha256((folder / n).read_bytes()).hexdigest(): t for n, t in DOWNSTREAM_CAPTIONS.items()}

    def respond(call: ChatCall) -> Reply:
        digest = hashlib.sha256(call.images[0][1]).hexdigest() if call.images else ""
        if "multiple choice question" in call.first_user_text:
            return answer("The animal has a bushy tail.\nAnswer: A")
        if "one-sentence caption" in call.first_user_text:
            return answer(downstream.get(digest, "A picture."))
        return answer(by_image.get(digest, "An unremarkable picture of something ordinary and plain."))

    return respond

"""The installed wheel, not only an editable checkout, carries its recipes, tables and sample."""

from __future__ import annotations

import json
import subprocess
import sys
import venv
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

pytestmark = pytest.mark.slow


def test_wheel_installed_in_a_fresh_environment_builds_the_sample_corpus_from_anywhere(tmp_path):
    wheels = tmp_path / "wheels"
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", str(ROOT), "--no-deps", "--no-build-isolation", "-q", "-w", str(wheels)],
        check=True,
        capture_output=True,
    )
    (wheel,) = wheels.glob("m4build-*.whl")
    env_dir = tmp_path / "env"
    # Dependencies come from the current interpreter; the package itself only from the wheel.
    venv.EnvBuilder(system_site_packages=True, with_pip=False).create(env_dir)
    python = env_dir / "bin" / "python"
    subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "install", "--no-deps", "-q", str(wheel)],
                   check=True, capture_output=True)

    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    located = subprocess.run([str(python), "-c", "import m4build.resources as r; print(r.data_root())"],
                             cwd=elsewhere, check=True, capture_output=True, text=True)
    assert str(env_dir) in located.stdout and "_data" in located.stdout

    result = subprocess.run(
        [str(env_dir / "bin" / "m4build"), "corpus", "worldcuisines", "--lang", "en,zh_cn",
         "--source", "sample", "--out", "run"],
        cwd=elsewhere, capture_output=True, text=True,
    )
    assert result.returncode == 0, result.stderr
    manifest = json.loads((elsewhere / "run" / "manifest.json").read_text())
    assert manifest["counts"]["sections"] > 0

"""A process that loads the catalog many times parses each definition once, and never gets a
catalog older than its files: what is reused is keyed by the bytes it was made from."""

from __future__ import annotations

from pathlib import Path

import pytest

from rulegen.catalog import load_catalog
from rulegen.errors import SpecError
from rulegen.spec.models import spec_model

BUILTIN = Path(__file__).resolve().parents[2] / "src/rulegen/catalog/signals/cpu_iowait.yaml"


def _own_signal(folder: Path, about: str) -> None:
    text = BUILTIN.read_text("utf-8").replace("signal: cpu_iowait", "signal: own_iowait")
    text = text.replace("alert: CpuIowaitHigh", "alert: OwnIowaitHigh")
    text = text.replace("Mean over CPUs", about, 1)
    assert about in text
    (folder / "own.yaml").write_text(text, "utf-8")


def test_the_same_files_give_the_same_catalog_and_spec_model(tmp_path: Path) -> None:
    _own_signal(tmp_path, "First")
    first, again = load_catalog([tmp_path]), load_catalog([tmp_path])
    assert again is first
    assert spec_model(again) is spec_model(first)
    assert load_catalog() is load_catalog() is not first


def test_an_edited_definition_is_read_again(tmp_path: Path) -> None:
    _own_signal(tmp_path, "First")
    first = load_catalog([tmp_path])
    _own_signal(tmp_path, "Second")
    second = load_catalog([tmp_path])
    assert second is not first
    assert second.fingerprint != first.fingerprint
    assert second.signals["own_iowait"].about.startswith("Second")
    assert first.signals["own_iowait"].about.startswith("First")


def test_a_broken_edit_is_an_error_not_the_last_good_catalog(tmp_path: Path) -> None:
    _own_signal(tmp_path, "First")
    load_catalog([tmp_path])
    (tmp_path / "own.yaml").write_text("signal: own_iowait\nalert: [\n", "utf-8")
    with pytest.raises(SpecError) as raised:
        load_catalog([tmp_path])
    assert "own.yaml" in str(raised.value.diagnostics[0].file)
    (tmp_path / "own.yaml").write_bytes(b"signal: \xff\n")
    with pytest.raises(SpecError, match="not UTF-8"):
        load_catalog([tmp_path])


def test_a_new_file_in_the_folder_is_seen(tmp_path: Path) -> None:
    _own_signal(tmp_path, "First")
    first = load_catalog([tmp_path])
    (tmp_path / "more.yml").write_text("signal: x\n", "utf-8")
    with pytest.raises(SpecError):
        load_catalog([tmp_path])
    (tmp_path / "more.yml").unlink()
    assert load_catalog([tmp_path]) is first


def test_the_same_bytes_in_another_folder_keep_their_own_file_names(tmp_path: Path) -> None:
    """A definition names its file in messages: equal bytes elsewhere are not the same
    catalog, though its fingerprint (what the render cache keys on) is the same."""
    first_dir, second_dir = tmp_path / "a", tmp_path / "b"
    first_dir.mkdir()
    second_dir.mkdir()
    _own_signal(first_dir, "Same")
    _own_signal(second_dir, "Same")
    first, second = load_catalog([first_dir]), load_catalog([second_dir])
    assert first.fingerprint == second.fingerprint
    assert first.signals["own_iowait"].source == str(first_dir / "own.yaml")
    assert second.signals["own_iowait"].source == str(second_dir / "own.yaml")
    # the built-in definitions and the spec model are the same objects all the same
    assert first.signals["cpu_iowait"] is second.signals["cpu_iowait"]
    assert spec_model(first) is spec_model(second)

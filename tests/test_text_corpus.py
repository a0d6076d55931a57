"""The corpus of relpos.book.text: the stdlib's modules, filtered, split, hashed.

The filters run on a fake standard library (a few files in tmp_path); the
splits, the stream and the hash on the real one of this interpreter (built once
per process, a few seconds). That the build is deterministic is checked against
the hash the stored results recorded: built by another process, on another day
(the same Python version only: another standard library has another hash).
"""

from __future__ import annotations

import platform

import pytest
import torch

from relpos.book.text import corpus as text_corpus
from relpos.book.text.corpus import (
    LEFT_OUT,
    SPLITS,
    TEST_FOLDERS,
    Corpus,
    build_corpus,
    decode,
    docstrings,
    encode,
    split_of,
    stdlib_corpus,
    stdlib_modules,
)

FAKE_FILES = {
    "os.py": '"""Operating system."""\n',
    "email/__init__.py": '"""Email."""\n',
    "email/mime/text.py": '"""MIME text."""\n',
    "email/test/helper.py": '"""a test helper"""\n',
    "unittest/__init__.py": '"""The testing library stays."""\n',
    "unittest/test/test_case.py": '"""a test suite"""\n',
    "ctypes/tests/util.py": '"""a test suite"""\n',
    "test/support.py": '"""the test package"""\n',
    "test_grammar.py": '"""a test module"""\n',
    "idlelib/editor.py": '"""the IDLE application"""\n',
    "idlelib/idle_test/htest.py": '"""its tests"""\n',
    "turtledemo/clock.py": '"""a demo"""\n',
    "pydoc_data/topics.py": '"""generated"""\n',
    "__phello__/spam.py": '"""a fixture"""\n',
    "site-packages/numpy/core.py": '"""installed, not stdlib"""\n',
    "config-3.11-x86_64-linux-gnu/python-config.py": '"""not importable"""\n',
    "notes.txt": "not Python\n",
}


@pytest.fixture
def fake_root(tmp_path):
    for name, text in FAKE_FILES.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return tmp_path


@pytest.fixture(scope="module")
def corpus():
    return stdlib_corpus("docstrings")


def test_the_filters_keep_the_importable_library_without_tests_or_demos(fake_root):
    assert list(stdlib_modules(fake_root)) == [
        "email",
        "email.mime.text",
        "os",
        "unittest",
    ]


def test_the_docstrings_corpus_reads_module_class_and_function_docs_in_order(
    fake_root,
):
    source = (
        '"""Module."""\n'
        "class A:\n"
        '    """Class A."""\n'
        "    def f(self):\n"
        '        """Method f.\n\n        Indented body."""\n'
        "async def g():\n"
        '    """Coroutine g."""\n'
        "def h():\n"
        "    pass\n"
    )
    assert docstrings(source) == [
        "Module.",
        "Class A.",
        "Method f.\n\nIndented body.",
        "Coroutine g.",
    ]
    built = build_corpus("docstrings", fake_root)
    assert built.texts["os"] == b"Operating system."
    assert build_corpus("source", fake_root).texts["os"] == FAKE_FILES["os.py"].encode()
    with pytest.raises(ValueError, match="does not parse"):
        docstrings("def (:", name="broken")


def test_the_real_corpus_has_no_test_suite_no_left_out_package(corpus):
    assert len(corpus.texts) > 300 and corpus.size > 500_000
    for name in corpus.texts:
        parts = name.split(".")
        assert not TEST_FOLDERS & set(parts), name
        assert parts[0] not in LEFT_OUT, name
        assert not parts[-1].startswith("test_"), name
    assert "unittest" in corpus.texts and "json.decoder" in corpus.texts
    assert list(corpus.texts) == sorted(corpus.texts)


def test_splits_are_disjoint_by_module_and_cover_every_module(corpus):
    splits = {split: corpus.modules(split) for split in SPLITS}
    seen = [name for names in splits.values() for name in names]
    assert sorted(seen) == sorted(corpus.texts)  # every module, exactly once
    assert all(split_of(name) == s for s, names in splits.items() for name in names)
    assert 0.05 < len(splits["test"]) / len(seen) < 0.15
    assert 0.05 < len(splits["valid"]) / len(seen) < 0.15
    stream = corpus.stream("test")
    assert stream.dtype == torch.uint8
    assert stream.numel() == sum(len(corpus.texts[n]) + 1 for n in splits["test"])
    assert int((stream == 0).sum()) == len(splits["test"])  # one end per document
    about = corpus.about()
    assert about["sha256"] == corpus.sha256 and about["bytes"] == corpus.size
    assert sum(s["modules"] for s in about["splits"].values()) == about["modules"]


def test_the_hash_changes_with_one_byte_and_the_end_byte_is_refused():
    one = Corpus("docstrings", "3", {"a": b"text"})
    assert one.sha256 == Corpus("docstrings", "3", {"a": b"text"}).sha256
    assert one.sha256 != Corpus("docstrings", "3", {"a": b"texT"}).sha256
    assert one.sha256 != Corpus("docstrings", "3", {"b": b"text"}).sha256
    with pytest.raises(ValueError, match="end-of-document"):
        Corpus("docstrings", "3", {"a": b"te\0xt"})
    with pytest.raises(ValueError, match="kind must be one of"):
        Corpus("prose", "3", {})


@pytest.mark.slow
def test_encode_decode_round_trip_and_bad_input():
    text = "Return the sum of a and b -- naïve, ∑, 'quoted'\n"
    tokens = encode(text)
    assert tokens.dtype == torch.long and tokens.numel() == len(text.encode())
    assert decode(tokens) == text
    with pytest.raises(ValueError, match="0 .. 255"):
        decode(torch.tensor([65, 256]))
    with pytest.raises(TypeError, match="text must be a str"):
        encode(b"bytes")


def test_the_licence_is_stated():
    assert "PSF License Agreement" in text_corpus.__doc__


@pytest.mark.parametrize(
    "name", ["text_causal.json", "text_masked.json", "text_gradients.json"]
)
def test_the_stored_results_name_this_corpus_on_their_python(corpus, name):
    """A rebuilt corpus has the hash the results record (same Python version only):
    the corpus is the same bytes in another process, on another day."""
    from relpos.book import results

    recorded = results.load(name)["corpus"]
    assert recorded["kind"] == "docstrings" and len(recorded["sha256"]) == 64
    if recorded["python"] != platform.python_version():
        pytest.skip(
            f"{name} was measured on Python {recorded['python']}, this is "
            f"{platform.python_version()}: another standard library, another hash"
        )
    assert recorded["sha256"] == corpus.sha256
    assert recorded["bytes"] == corpus.size

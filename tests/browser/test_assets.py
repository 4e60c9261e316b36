"""The built assets are committed (``scheduler_core/dashboard/static``, deployed with the package, so the
dashboard works under ``func start`` and in Azure without a Node build at deploy time). This test builds the
front end from ``dashboard/`` into a temporary folder, with the type check, and requires the committed files
to be exactly that output: a source changed without ``npm run build:dashboard`` fails here."""

from __future__ import annotations

import fnmatch
import subprocess
from pathlib import Path

from tests.browser.conftest import node_path

ROOT = Path(__file__).resolve().parents[2]
STATIC = ROOT / "scheduler_core" / "dashboard" / "static"


def test_committed_assets_are_what_the_sources_build(tmp_path: Path) -> None:
    out = tmp_path / "static"
    done = subprocess.run(
        [node_path(), str(ROOT / "dashboard" / "build.mjs"), "--outdir", str(out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
    )
    assert done.returncode == 0, f"the build failed (type errors?):\n{done.stdout}\n{done.stderr}"
    built = {path.name: path.read_bytes() for path in out.iterdir()}
    committed = {path.name: path.read_bytes() for path in STATIC.iterdir() if path.is_file()}
    assert sorted(built) == ["app.css", "app.js", "icon.svg", "index.html"]
    stale = sorted(name for name in built.keys() | committed.keys() if built.get(name) != committed.get(name))
    assert stale == [], f"{stale} differ from a fresh build: run `npm run build:dashboard` and commit them"


def test_the_build_fails_on_a_type_error(tmp_path: Path) -> None:
    # Guards the test above: the build really type-checks (a broken source cannot be committed as built).
    sources = tmp_path / "dashboard"
    (sources / "src").mkdir(parents=True)
    (sources / "build.mjs").write_text((ROOT / "dashboard" / "build.mjs").read_text())
    (sources / "tsconfig.json").write_text((ROOT / "dashboard" / "tsconfig.json").read_text())
    (sources / "src" / "main.ts").write_text('const n: number = "not a number";\nexport default n;\n')
    (tmp_path / "node_modules").symlink_to(ROOT / "node_modules")
    done = subprocess.run(
        [node_path(), str(sources / "build.mjs"), "--outdir", str(tmp_path / "out")],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
    )
    assert done.returncode != 0
    assert "TS2322" in done.stdout + done.stderr
    assert not (tmp_path / "out" / "app.js").exists()


def ignored(path: str, entries: list[str]) -> bool:
    """Whether ``.funcignore`` ``entries`` (gitignore syntax: ``/`` anchors a pattern to the root, a trailing
    ``/`` matches folders, a pattern without ``/`` matches a name at any depth) leave ``path`` out."""
    parts = path.split("/")
    for entry in entries:
        if not entry or entry.startswith("#"):
            continue
        pattern = entry.strip("/")
        folders_only = entry.endswith("/")
        anchored = entry.startswith("/") or "/" in pattern
        for depth in range(1, len(parts) + 1):
            if folders_only and depth == len(parts):
                break
            candidate = "/".join(parts[:depth]) if anchored else parts[depth - 1]
            if fnmatch.fnmatchcase(candidate, pattern):
                return True
    return False


def test_the_package_ships_the_built_assets_and_not_the_sources() -> None:
    entries = [line.strip() for line in (ROOT / ".funcignore").read_text(encoding="utf-8").splitlines()]
    for name in ("app.js", "app.css", "index.html", "icon.svg"):
        assert not ignored(f"scheduler_core/dashboard/static/{name}", entries), name
    assert not ignored("scheduler_core/dashboard/__init__.py", entries)
    for source in (
        "dashboard/src/main.ts",
        "dashboard/build.mjs",
        "node_modules/chart.js/package.json",
        "tests/browser/scenarios.mjs",
    ):
        assert ignored(source, entries), source
    # Guards the matcher: an unanchored "dashboard/" would have left the deployed module out too.
    assert ignored("scheduler_core/dashboard/static/app.js", ["dashboard/"])
    assert not ignored("scheduler_core/dashboard/static/app.js", ["/dashboard/"])

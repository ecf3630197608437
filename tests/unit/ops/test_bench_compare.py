"""`python -m ops.bench.compare`: alternating runs, the figure picked from each report, medians
and the verdict in the exit code."""
from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from ops.bench import compare as cmp


def test_figure_of_reads_a_dotted_field_and_refuses_what_is_not_a_number() -> None:
    report = {"ratio": 0.5, "steps": {"ingest": {"peak": 120}}, "flag": True, "name": "x"}
    assert cmp.figure_of(report, "ratio") == 0.5
    assert cmp.figure_of(report, "steps.ingest.peak") == 120.0
    with pytest.raises(KeyError):
        cmp.figure_of(report, "steps.project.peak")
    listed = {"steps": {"ingest": {"ratio": [1.02, 1.05]}}}
    assert cmp.figure_of(listed, "steps.ingest.ratio.1") == 1.05
    with pytest.raises(KeyError):
        cmp.figure_of(listed, "steps.ingest.ratio.2")
    for field in ("flag", "name", "steps"):
        with pytest.raises(ValueError):
            cmp.figure_of(report, field)


def test_runs_alternate_base_first_with_each_sides_python(tmp_path: Path) -> None:
    calls: list[tuple[Path, Path]] = []
    figures = iter([0.40, 0.50, 0.42, 0.52, 0.41, 0.49])

    def fake(checkout: Path, python: Path, argv: list[str]) -> str:
        calls.append((checkout, python))
        assert argv == ["ops.bench.projection_bench", "--json"]
        return json.dumps({"ratio": next(figures)})

    found = cmp.compare(tmp_path, ["ops.bench.projection_bench", "--json"], 3, "ratio", runner=fake)
    assert found == {"base": [0.40, 0.42, 0.41], "this": [0.50, 0.52, 0.49]}
    assert calls[0] == (tmp_path, tmp_path / ".venv" / "bin" / "python")
    assert calls[1] == (cmp.HERE, Path(sys.executable))
    assert [c[0] for c in calls] == [tmp_path, cmp.HERE] * 3


def _base_with_python(tmp_path: Path) -> Path:
    (tmp_path / ".venv" / "bin").mkdir(parents=True)
    (tmp_path / ".venv" / "bin" / "python").write_text("")
    return tmp_path


@pytest.mark.parametrize(("base", "this", "lower", "code"), [
    ([0.40, 0.41], [0.50, 0.52], False, 0), ([0.50, 0.52], [0.40, 0.41], False, 1),
    ([0.50, 0.52], [0.40, 0.41], True, 0), ([0.50, 0.50], [0.50, 0.50], False, 0)])
def test_the_exit_code_says_whether_this_checkout_is_the_same_or_better(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
        base: list[float], this: list[float], lower: bool, code: int) -> None:
    monkeypatch.setattr(cmp, "compare", lambda *a, **k: {"base": base, "this": this})
    argv = [str(_base_with_python(tmp_path)), "--pairs", "2", *(["--lower-is-better"] if lower else []),
            "--", "projection_bench", "--repeat", "3"]
    assert cmp.main(argv) == code
    out = capsys.readouterr().out
    assert "medians of 2 pairs" in out and ("same or better" in out) == (code == 0)


def test_a_checkout_without_a_venv_or_a_failing_run_is_exit_2(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    assert cmp.main([str(tmp_path), "--", "projection_bench"]) == 2
    assert "has no .venv/bin/python" in capsys.readouterr().err

    def failing(*args: object, **kwargs: object) -> dict[str, list[float]]:
        raise RuntimeError("exited 1: boom")

    monkeypatch.setattr(cmp, "compare", failing)
    assert cmp.main([str(_base_with_python(tmp_path)), "--", "projection_bench"]) == 2
    assert "boom" in capsys.readouterr().err


def test_also_collects_more_figures_of_the_same_runs(tmp_path: Path) -> None:
    reports = iter([{"ratio": 0.4, "cpu": 2.0}, {"ratio": 0.5, "cpu": 1.0}] * 2)
    also: dict[str, dict[str, list[float]]] = {"cpu": {}}
    found = cmp.compare(tmp_path, ["ops.bench.x", "--json"], 2, "ratio",
                        runner=lambda *a: json.dumps(next(reports)), also=also)
    assert found == {"base": [0.4, 0.4], "this": [0.5, 0.5]}
    assert also == {"cpu": {"base": [2.0, 2.0], "this": [1.0, 1.0]}}


def test_a_benchmark_that_misses_its_goal_still_gives_its_figure(tmp_path: Path) -> None:
    """Exit 1 is a benchmark's "goal not met" (projection_bench below its ratio): the report is
    read; exit 2, or nothing printed, is a run that failed."""
    (tmp_path / "missed.py").write_text('import sys; print(\'{"ratio": 0.49}\'); sys.exit(1)\n')
    (tmp_path / "broken.py").write_text("import sys; sys.exit(2)\n")
    (tmp_path / "silent.py").write_text("import sys; sys.exit(1)\n")
    python = Path(sys.executable)
    assert cmp.figure_of(json.loads(cmp.run_once(tmp_path, python, ["missed"])), "ratio") == 0.49
    for name in ("broken", "silent"):
        with pytest.raises(RuntimeError, match="exited"):
            cmp.run_once(tmp_path, python, [name])

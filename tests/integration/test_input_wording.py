"""Small input cases that used to end in an unhelpful error: YAML exponent
floats, a byte-order mark, boolean bounds, a ledger of the wrong type, and the
deprecated ``--epsilon`` in the help."""

import dask
import dask.dataframe as dd
import numpy as np
import pandas as pd
import pytest

import dpmic_dask as dm
from dpmic_dask.batch.cli import Exit
from dpmic_dask.batch.jobs import JobError, load_job
from tests.cli import invoke
from tests.jobfiles import write_job

COLUMNS = {"a": [0, 1], "b": [-1.5, 1.5]}


def toml_job(path, **given):
    """A TOML job file of columns a and b at eps 0.5."""
    return write_job(path, columns=COLUMNS, eps=0.5, cluster=None, **given)


def yaml_job(path, eps="0.5", **given):
    """A YAML job file of columns a and b, its eps written as the text ``eps`` and
    its delta as ``1e-6`` (exponents without a point: text to YAML 1.1)."""
    return write_job(path, columns=COLUMNS, eps=0.5, privacy={"delta": 1e-6}, cluster=None,
                     replace={"eps: 0.5": f"eps: {eps}", "delta: 1.0e-06": "delta: 1e-6"},
                     **given)


def validate(path):
    return invoke(["validate", str(path)])


# ---------------------------------------------------------------- job files


@pytest.mark.parametrize("written, value", [("1e-1", 0.1), ("2E0", 2.0), ("1.5e+1", 15.0),
                                            (".5e1", 5.0), ("0.1", 0.1), ("1", 1)])
def test_yaml_exponent_floats_are_numbers(tmp_path, written, value):
    path = yaml_job(tmp_path / "job.yaml", written)
    assert f"eps: {written}\n" in path.read_text() and "delta: 1e-6\n" in path.read_text()
    job = load_job(path)
    assert job.eps == value and job.delta == 1e-6
    assert validate(path).exit_code == Exit.OK


def test_yaml_strings_stay_strings(tmp_path):
    path = yaml_job(tmp_path / "job.yaml", '"1e-1"')  # quoted: the author asked for a string
    with pytest.raises(JobError, match="privacy.eps must be a number"):
        load_job(path)


@pytest.mark.parametrize("repeat", ["privacy: {eps: 3.0}\n", "  a: [0, 100]\n"],
                         ids=["section", "column"])
def test_a_yaml_key_given_twice_is_refused(tmp_path, repeat):
    """PyYAML keeps the last of a repeated key: a second ``privacy:`` section was
    charged instead of the first, a column's second bounds used, without a word
    (TOML refuses both). Refused, naming the key and its line."""
    path = yaml_job(tmp_path / "job.yaml")
    text = path.read_text()
    if repeat.startswith("  "):  # a second entry for column a inside columns:
        at = text.index("\n", text.index("columns:")) + 1
        text = text[:at] + repeat + text[at:]
    else:
        text += repeat
    path.write_text(text)
    key = "privacy" if repeat.startswith("privacy") else "a"
    with pytest.raises(JobError, match=f"the key '{key}' is given twice"):
        load_job(path)
    assert validate(path).exit_code == Exit.INVALID


def test_yaml_merge_keys_still_merge(tmp_path):
    """The check of repeated keys read "<<: *anchor" as a key (no constructor):
    a job file sharing column settings through an anchor no longer loaded. A key
    given beside a merge overrides the merged one, as YAML says."""
    path = yaml_job(tmp_path / "job.yaml")
    text = path.read_text()
    at = text.index("\n", text.index("columns:")) + 1
    path.write_text(text[:at] + "  base: &shared {bounds: [-4, 4]}\n"
                    + "  c: {<<: *shared, bounds: [0, 1]}\n" + text[at:])
    job = load_job(path)
    assert list(job.bounds["c"]) == [0, 1] and list(job.bounds["base"]) == [-4, 4]


@pytest.mark.parametrize("name, write", [("job.toml", toml_job), ("job.yaml", yaml_job)])
def test_a_byte_order_mark_is_accepted(tmp_path, name, write):
    path = write(tmp_path / name, encoding="utf-8-sig")
    assert path.read_bytes().startswith(b"\xef\xbb\xbf")
    assert load_job(path).eps == 0.5
    result = validate(path)
    assert result.exit_code == Exit.OK, result.output


def test_a_job_file_that_is_not_utf8_gets_a_hint(tmp_path):
    path = toml_job(tmp_path / "job.toml", name="n\xe4chtlich", encoding="latin-1")
    assert b'"n\xe4chtlich"' in path.read_bytes()
    result = validate(path)
    assert result.exit_code == Exit.INVALID
    assert result.output.strip() == f"error: {path}: the job file is not UTF-8 text; save it as UTF-8"


# ---------------------------------------------------------------- boolean columns


def test_false_true_bounds_a_boolean_column():
    gen = np.random.default_rng(3)  # test data only
    x = gen.random(4000)
    frame = pd.DataFrame({"flag": x + 0.2 * gen.random(4000) > 0.6, "x": x})
    ddf = dd.from_pandas(frame, npartitions=3)
    for data in (frame, ddf):
        as_bool = data.dpmic.pairwise_nonprivate(bounds={"flag": (False, True), "x": (0, 1)},
                                                 B=16, c=2)
        as_int = data.dpmic.pairwise_nonprivate(bounds={"flag": (0, 1), "x": (0, 1)}, B=16, c=2)
        pd.testing.assert_frame_equal(as_bool, as_int)
        assert as_bool.micr.iloc[0] > 0.3
        result = data.dpmic.pairwise(1.0, bounds={"flag": (False, True), "x": (0, 1)},
                                     ledger=dm.InMemoryLedger(uncapped=True))
        assert result.n == 4000
    with pytest.raises(dm.InvalidParameterError, match="lo < hi"):
        frame.dpmic.pairwise(1.0, bounds={"flag": (True, False), "x": (0, 1)})
    with pytest.raises(dm.InvalidParameterError, match="two finite real numbers"):
        frame.dpmic.pairwise(1.0, bounds={"flag": (False, 1), "x": (0, 1)})  # mixed: a slip


# ---------------------------------------------------------------- ledger argument


def _unreadable_frame():
    """A Dask frame whose only partition fails when read: reading it at all would
    raise DataReadError, not the error under test."""
    def part():
        raise RuntimeError("the data must not be read")

    meta = pd.DataFrame({"a": pd.Series([], dtype=float), "b": pd.Series([], dtype=float)})
    return dd.from_delayed([dask.delayed(part)()], meta=meta, verify_meta=False)


CALLS = [
    lambda f, ledger: f.dpmic.pairwise(1.0, bounds={"a": (0, 1), "b": (0, 1)}, ledger=ledger),
    lambda f, ledger: f.dpmic.pairwise(1.0, bounds="private", ledger=ledger),
    lambda f, ledger: f.dpmic.top_pairs(1, 1.0, bounds={"a": (0, 1), "b": (0, 1)},
                                        ledger=ledger),
    lambda f, ledger: f.dpmic.pairs_above(0.3, 1.0, bounds={"a": (0, 1), "b": (0, 1)},
                                          max_pairs=1, ledger=ledger),
]


@pytest.mark.parametrize("ledger", [{}, b"sqlite:///ledger.db", 3, object()])
@pytest.mark.parametrize("call", CALLS)
def test_a_ledger_of_the_wrong_type_is_refused_before_any_data_is_read(ledger, call):
    with pytest.raises(dm.InvalidParameterError, match="ledger must be a ledger") as info:
        call(_unreadable_frame(), ledger)
    assert type(ledger).__name__ in str(info.value)


@pytest.mark.parametrize("call", CALLS[:1] + CALLS[2:])
def test_a_ledger_url_that_cannot_be_used_is_refused_before_any_data_is_read(call, tmp_path):
    with pytest.raises(dm.LedgerError, match="does not exist"):
        call(_unreadable_frame(), f"sqlite:///{tmp_path}/missing.db")
    with pytest.raises(dm.InvalidParameterError, match="no ledger is registered"):
        call(_unreadable_frame(), "ftp://host/ledger")


# ---------------------------------------------------------------- help


def test_budget_help_shows_eps_only():
    for args in (["budget", "--help"], ["budget", "init", "--help"]):
        result = invoke(args)
        assert result.exit_code == Exit.OK and "--eps" in result.output
        assert "--epsilon" not in result.output, args

"""What ``dpmic run``, ``dpmic deliver`` and ``dpmic budget forecast`` do.

A run is keyed by ``(dataset, job name, run id)``. Order of ``dpmic run``:

1. the ledger can be written (a read-only ledger is refused first);
2. the journal: a run that already charged is settled from it -- refused if a
   different job (another fingerprint, :func:`~dpmic_dask.batch.jobplan.job_fingerprint`)
   charged the key, else its values are delivered to this job's output if they
   were not delivered there, or if what was delivered there is missing now (a
   deleted file; a table without the run's rows), and nothing is computed or
   charged. Output that cannot be restored from the journal is a
   :class:`DeliveryError` naming ``dpmic deliver``: a rerun never reports a
   delivery that is not there;
3. the output can take this job's rows (folder probe, SQL table columns);
4. the budget precheck; then the cluster, the data, the one charge, the noise;
5. the charge commits together with the released rows (the journal);
6. the rows are delivered from the journal, and the delivery recorded.

A failure in 6 keeps the release in the journal (:class:`DeliveryError`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable

from dpmic_dask import config
from dpmic_dask.backends import backend_for
from dpmic_dask.batch import cluster, jobio  # modules: their functions looked up when called
from dpmic_dask.batch.forecast import (  # noqa: F401  (Forecast re-exported)
    Forecast,
    forecast,
    remaining_words,
)
from dpmic_dask.batch.interrupts import Interrupted, note_nothing_charged
from dpmic_dask.batch.jobcausal import (
    causal_arguments,
    deliver_graph,
    encode_graph,
    released_sentence,
)
from dpmic_dask.batch.jobdelivered import delivery_gap
from dpmic_dask.batch.joboutput import (
    DeliveryError,
    check_name_free,
    check_output,
    deliver,
    destination,
    partial_rows_advice,
    result_rows,
    shown,
    undeliverable,
)
from dpmic_dask.batch.jobplan import (
    job_cost,
    job_fingerprint,
    job_fingerprints,
    job_release_plan,
)
from dpmic_dask.batch.journal import (
    HeldWarnings,
    JournaledRun,
    JournalEntry,
    find_run,
    record_delivery,
)
from dpmic_dask.batch.pageledger import history_section, redacted
from dpmic_dask.batch.runpage import (
    missing_parts,
    report_text_path,
    rows_page_path,
    write_report_text,
    write_result_page,
    write_rows_page,
)
from dpmic_dask.causal.discover import causal_graph
from dpmic_dask.errors import DPMICError, InvalidParameterError, LedgerError, RunClaimedError
from dpmic_dask.privacy.accounting import ledger_from_url
from dpmic_dask.privacy.ledger import SQLLedger
from dpmic_dask.release.charge import check_ledger_unit, precheck_budget
from dpmic_dask.release.executor import run_release
from dpmic_dask.release.reportlines import report_lines

Echo = Callable[..., None]


def open_ledger(url: str) -> SQLLedger:
    """The ledger at ``url``, refused now if it cannot record a charge or keep
    the release journal a run writes with its charge."""
    ledger = ledger_from_url(url)
    if not isinstance(ledger, SQLLedger):
        raise InvalidParameterError(
            "dpmic run needs a ledger that keeps a release journal with its charges "
            "(sqlite:/// or postgresql://)")
    ledger.check_writable()
    return ledger


def _lost(job, entry: JournalEntry) -> RunClaimedError:
    return RunClaimedError(
        f"run {entry.run_id!r} of job {job.name!r} on dataset {job.dataset!r} was charged "
        f"(charge {entry.charge_id}) but its values were not kept: its release failed "
        "after the charge, or it ran before the ledger kept a journal. Nothing was charged "
        "again; use a new run id to release again")


def _other_job(job, entry: JournalEntry) -> InvalidParameterError:
    return InvalidParameterError(
        f"run {entry.run_id!r} of job {job.name!r} on dataset {job.dataset!r} was charged "
        f"(charge {entry.charge_id}) by a different job with the same name (its input, "
        "columns, privacy parameters or statistics differ from this file's): nothing was "
        "charged or written. Run it with the job file that released it ('dpmic deliver "
        "... --to' writes its kept values elsewhere), or give each job file its own [job] "
        "name; a new run id is a new release, charged again")


def _deliver(job, ledger: SQLLedger, entry: JournalEntry, echo: Echo, result=None) -> str:
    """Write the journaled values, then (an output folder) the run's page: from the
    ``result`` at hand, else from the journaled rows."""
    try:
        check_output(job, entry.run_id)  # again: the output may have changed since the charge
    except DPMICError as exc:  # the release is kept: this is a failure to deliver
        raise undeliverable(job, entry.run_id, str(exc)) from None
    if job.causal is not None:  # [causal]: the journaled graph's files
        history = history_section(ledger, job.dataset, source=redacted(ledger.url),
                                  charge_id=entry.charge_id, run_id=entry.run_id,
                                  job=job.name)
        where = deliver_graph(job, entry.payload or "", entry.run_id, ledger=history)
    else:
        where = deliver(job, entry.rows(), entry.run_id)
        if job.output_path:
            _write_page(job, ledger, entry, result, where, echo)
    try:
        record_delivery(ledger, entry.charge_id, destination(job, entry.run_id))
    except LedgerError as exc:
        echo(f"warning: delivered, but the delivery could not be recorded in the ledger: "
             f"{exc}", err=True)
    return where


def _write_page(job, ledger: SQLLedger, entry: JournalEntry, result, where: str,
                echo: Echo) -> None:
    """The HTML page beside a pairwise run's file: from the result at the run that
    released it, else (a delivery from the journal) from the journaled rows unless
    the page is there already; with the dataset's ledger history up to the run's
    charge, and the release's report text beside it (for ``dpmic report``). A page
    that cannot be written is a warning, never a failed delivery (the values are
    delivered)."""
    path, text = rows_page_path(Path(where)), entry.report()
    title = f"Run {entry.run_id} of job {job.name}"
    try:
        if text is not None and (result is not None or not report_text_path(path).is_file()):
            write_report_text(path, text)
    except OSError as exc:
        echo(f"warning: the run's report text beside {path.name} could not be written: "
             f"{exc.strerror or type(exc).__name__}", err=True)
    if result is None and path.is_file():
        return
    history = history_section(ledger, job.dataset, source=redacted(ledger.url),
                              charge_id=entry.charge_id, run_id=entry.run_id, job=job.name)
    try:
        if result is not None:
            write_result_page(result, path, title=title, ledger=history)
        else:
            write_rows_page(entry.rows(), path, title=title, ledger=history, report=text)
    except OSError as exc:
        echo(f"warning: the run's page {path.name} could not be written: "
             f"{exc.strerror or type(exc).__name__}", err=True)


def _settle(job, ledger: SQLLedger, entry: JournalEntry, echo: Echo) -> None:
    """A run of this key already charged: refuse another job's run, report a run
    whose values were lost, else deliver the kept values to this job's output
    unless they were delivered there already and are still there. Nothing is
    computed or charged."""
    if not entry.same_job(job_fingerprints(job)):
        raise _other_job(job, entry)
    if not entry.kept:
        raise _lost(job, entry)
    here = destination(job, entry.run_id)
    if entry.delivered_to(here):
        _redeliver_missing(job, ledger, entry, here, echo)
        return
    try:
        where = _deliver(job, ledger, entry, echo)
    except DeliveryError:
        if not _settled_elsewhere(entry, here, echo):
            raise
        return
    echo(f"run {entry.run_id} already released (charge {entry.charge_id}); delivered its "
         f"journaled values to {where}; nothing was charged")


def _settled_elsewhere(entry: JournalEntry, here: str, echo: Echo) -> bool:
    """Whether ``entry`` was delivered to another destination than ``here`` (by
    ``dpmic deliver --to``, after the job's own output was lost): then a retry
    of the run has nothing to do, and says where the values are."""
    elsewhere = [where for _, where in entry.deliveries if where != here]
    if elsewhere:
        echo(f"run {entry.run_id} already released and delivered to {shown(elsewhere[-1])} "
             f"(this job's own output cannot be written); nothing was charged or written")
    return bool(elsewhere)


def _redeliver_missing(job, ledger: SQLLedger, entry: JournalEntry, full: str,
                       echo: Echo) -> None:
    """A run delivered to this job's output (``full``, its destination) before:
    nothing to do if the output still holds it, else write the journaled values
    again (no charge). Output that cannot be written again is one line naming
    ``dpmic deliver`` (exit 7)."""
    gap = delivery_gap(job, entry)
    here = shown(full)
    if gap is None:
        page = rows_page_path(Path(full)) if job.output_path and job.causal is None else None
        gone = [] if page is None else missing_parts(page, entry.report())
        if page is not None and gone:
            _write_page(job, ledger, entry, None, full, echo)
            if not missing_parts(page, entry.report()):
                echo(f"run {entry.run_id} already released and delivered to {here}, but its "
                     f"{' and '.join(gone)} {'were' if len(gone) > 1 else 'was'} missing: wrote "
                     f"it again from the journaled values ({page.name}); nothing was charged")
                return
        echo(f"run {entry.run_id} already released and delivered to {here}; nothing to do")
        return
    if not gap.rewritable:
        if _settled_elsewhere(entry, full, echo):
            return
        raise undeliverable(
            job, entry.run_id, gap.reason or "a delivery never adds to a run's rows, so "
            "nothing was written", missing=gap.what,
            advice=gap.advice or partial_rows_advice(job, entry.run_id))
    try:
        where = _deliver(job, ledger, entry, echo)
    except DeliveryError as exc:
        if _settled_elsewhere(entry, full, echo):
            return
        raise undeliverable(job, entry.run_id, exc.reason, missing=gap.what) from None
    echo(f"run {entry.run_id} already released (charge {entry.charge_id}), but {gap.what}: "
         f"delivered its journaled values again to {where}; nothing was charged")


def run_job(job, run_id: str, *, progress=None, echo: Echo) -> None:
    """``dpmic run``: release once per key, or settle a run already charged.

    A run that loses the race for its key to a concurrent run of the same job
    (:class:`RunClaimedError` at the charge: nothing of its own was charged)
    settles from the winner's journal entry like a retry."""
    ledger = open_ledger(job.ledger_url)  # before any cluster starts or data is read
    fingerprint = job_fingerprint(job)
    entry = find_run(ledger, job.dataset, job.name, run_id)
    if entry is not None:
        _settle(job, ledger, entry, echo)
        return
    try:
        _release_once(job, run_id, ledger, fingerprint, progress=progress, echo=echo)
    except RunClaimedError:
        entry = find_run(ledger, job.dataset, job.name, run_id)
        if entry is None:
            raise
        _settle(job, ledger, entry, echo)


def _release_once(job, run_id: str, ledger: SQLLedger, fingerprint: str, *, progress,
                  echo: Echo) -> None:
    """The first run of a key: check, charge once, keep, deliver."""
    cost = job_cost(job)
    journaled = JournaledRun(ledger, run_id, job.name, fingerprint)
    # before any cluster starts or the output is touched (a refused run leaves
    # no folder or probe behind): the budget's privacy unit is the job's, and it pays
    check_ledger_unit(ledger, job.dataset, job.privacy_unit)
    precheck_budget(journaled, job.dataset, cost)
    check_output(job, run_id)
    try:
        check_name_free(job, run_id)
    except DPMICError:
        # unless this key's run was charged meanwhile (a race this run lost: its
        # charge below settles from the winner, whose file this is)
        if find_run(ledger, job.dataset, job.name, run_id) is None:
            raise
    held = HeldWarnings(journaled)  # warnings after the charge wait for its commit
    try:
        with held:
            result = _release(job, journaled, progress)
            if job.causal is not None:  # [causal]: the graph, journaled as its own payload
                entry = journaled.keep_payload(encode_graph(result, run_id=run_id, job=job))
            else:
                entry = journaled.keep(result_rows(result, run_id=run_id, job=job),
                                       report=str(result.report()))
    except Interrupted:
        # SIGINT / SIGTERM before the values were kept: as for a killed process,
        # the open charge is undone (no value left the process, nor a warning
        # that read its noise)
        if journaled.rollback():
            held.drop()
            note_nothing_charged()
        held.flush()
        raise
    except BaseException:
        journaled.abandon()  # a failure after the charge keeps the charge
        held.flush()
        raise
    held.flush()
    where = _deliver(job, ledger, entry, echo, result)
    if job.causal is not None:
        echo(released_sentence(result, run_id, where))
        _budget_lines(job, ledger, cost, echo)
        return
    echo(f"run {run_id}: released {len(result.pairs)} pairs "
         f"({result.mechanism}, eps={result.epsilon:g}) to {where}")
    if result.private_bounds is not None:
        found = result.private_bounds
        echo("private bounds (also in the output's x_lo, x_hi, y_lo, y_hi): "
             + ", ".join(f"{c} {found.formatted(c)}"
                         + (" unresolved" if c in found.unresolved else
                            " (may leave out a tail)" if c in found.unseen else "")
                         + (f" (about {found.infinite[c]:,.0f} infinite values clamped)"
                            if c in found.infinite else "")
                         + (" (about constant)" if c in found.one_bin else "")
                         for c in found.bounds))
        if found.pin():
            echo("to pin them as public in the job file (and stop paying for them):\n"
                 + found.pin())
    for line in report_lines(result):  # the check's findings, or why there was none
        echo(line)
    _budget_lines(job, ledger, cost, echo)


def _budget_lines(job, ledger: SQLLedger, cost, echo: Echo) -> None:
    """The budget left and the runs it pays for, after a delivered run; a ledger
    that cannot be read by then is a warning (the run was released and delivered:
    its exit says so, not the ledger's)."""
    try:
        left = remaining_words(ledger, job.dataset)
        runs = forecast(ledger, job.dataset, cost).sentence(f"of job {job.name!r}")
    except LedgerError as exc:
        echo(f"warning: released and delivered, but the remaining budget could not be "
             f"read: {exc}", err=True)
        return
    echo(f"remaining budget of {job.dataset!r}: {left}")
    echo(runs)


def deliver_job(job, run_id: str, *, echo: Echo, target=None) -> None:
    """``dpmic deliver``: write a charged run's journaled values (again), to the
    job's output or to ``target`` (the job with another output,
    :func:`~dpmic_dask.batch.outputnames.retarget`;
    the job file itself must still be the one that released the run)."""
    ledger = open_ledger(job.ledger_url)
    entry = find_run(ledger, job.dataset, job.name, run_id)
    if entry is None:
        raise InvalidParameterError(
            f"run {run_id!r} of job {job.name!r} on dataset {job.dataset!r} was never "
            "charged: there is nothing to deliver")
    if not entry.kept:
        raise _lost(job, entry)

    if not entry.same_job(job_fingerprints(job)):
        raise _other_job(job, entry)
    dest = job if target is None else target
    gap = delivery_gap(dest, entry)
    if gap is not None and not gap.rewritable:  # another release is there: never replaced
        raise undeliverable(dest, run_id, f"{gap.what}: {gap.reason or 'nothing was written'}",
                            advice=gap.advice)
    where = _deliver(dest, ledger, entry, echo)
    echo(f"run {run_id}: delivered the journaled values of charge {entry.charge_id} to "
         f"{where}; nothing was charged")


def run_causal(job, frame, ledger, progress):
    """The release of a ``[causal]`` job: :func:`~dpmic_dask.causal.causal_graph` on
    ``frame``, charged once to ``ledger`` (the run's
    :class:`~dpmic_dask.batch.journal.JournaledRun`)."""
    return causal_graph(frame, job.eps, ledger=ledger, dataset=job.dataset, label=job.name,
                        progress=progress, **causal_arguments(job))


def _release(job, ledger: JournaledRun, progress):
    """Start or reach the cluster, read the input, plan and run the release (one
    charge). ``[cluster] task_memory`` sets :mod:`dpmic_dask.config` for the run."""
    knobs = {} if job.task_memory is None else {"task_memory": job.task_memory}
    with config.set(**knobs), cluster.open_cluster(
            scheduler=job.scheduler, workers=job.workers, timeout=job.timeout,
            memory_limit=job.memory_limit):
        frame = jobio.load_input(job)
        if job.causal is not None:  # [causal]: a CPDAG, charged to the same ledger
            return run_causal(job, frame, ledger, progress)
        plan = job_release_plan(job, backend_for(frame).schema(frame))
        return run_release(frame, plan, ledger=ledger, dataset=job.dataset,
                           progress=config.resolve("progress", progress))


# ---------------------------------------------------------------- planning

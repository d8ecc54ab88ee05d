"""A short mutation run over the privacy core: does the test suite notice?

Each mutant breaks one privacy property on purpose (drops noise, shrinks it,
skips the charge, accounts a Gaussian release as pure DP, ...), applied as a
pytest plugin that patches the package when the tests import it. The privacy
tests then run with ``-x``; a mutant is *killed* when some test fails, and
*survives* when all pass. Survivors are listed, and ``docs/architecture.md``
says why each one that survives is acceptable (or it is a gap to close).

    python tools/mutants.py                 # every mutant
    python tools/mutants.py drop-gauss      # one by name
    python tools/mutants.py --list

Nothing here is imported by the package or collected by pytest.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

#: The tests that guard the privacy core (a mutant must fail at least one).
PRIVACY_TESTS = [
    "tests/statistical/test_release_noise_paths.py",
    "tests/integration/test_charge_contract.py",
    "tests/unit/test_mechanisms.py",
    "tests/unit/test_accounting.py",
    "tests/unit/test_costs.py",
    "tests/statistical/test_mechanism_noise.py",
    "tests/statistical/test_privacy_loss.py",
    "tests/statistical/test_sensitivity.py",
    "tests/statistical/test_selection.py",
    "tests/integration/test_private_bounds.py",
    "tests/integration/test_selection_release.py",
    "tests/statistical/test_categories_unknown.py",
    "tests/statistical/test_categories_alone.py",
    "tests/integration/test_ledger_approx.py",
    "tests/unit/test_bounds_check.py",
    "tests/statistical/test_bounds_check_noise.py",
]

#: name -> (what it breaks, the patch applied when the package is imported)
MUTANTS = {
    "drop-all-value-noise": ("every released value goes out exact", """
        from dpmic_dask.privacy.mechanisms import base
        def randomise(self, data, plan):
            if self.acts_on == "counts":
                return np.asarray(data)
            return np.clip(np.rint(np.asarray(data, float) / plan.lattice) * plan.lattice,
                           plan.low, plan.high)
        base.Mechanism.randomise = randomise
    """),
    "drop-all-but-laplace": ("exact values for every mechanism but micr-lap", """
        from dpmic_dask.privacy.mechanisms import base
        original = base.Mechanism.randomise
        def randomise(self, data, plan):
            if self.label == "micr-lap":
                return original(self, data, plan)
            if self.acts_on == "counts":
                return np.asarray(data)
            return np.clip(np.rint(np.asarray(data, float) / plan.lattice) * plan.lattice,
                           plan.low, plan.high)
        base.Mechanism.randomise = randomise
    """),
    "drop-gauss": ("Gaussian draws are zero", """
        from dpmic_dask.privacy import noise
        noise.DiscreteGaussian.draw = lambda self, scale, size: np.zeros(size, np.int64)
    """),
    "halve-value-noise": ("value noise drawn at half the stated scale", """
        import dataclasses
        from dpmic_dask.privacy.mechanisms import base
        original = base.noisy_values
        def noisy_values(exact, plan):
            return original(exact, dataclasses.replace(plan, noise_scale=plan.noise_scale / 2))
        base.noisy_values = noisy_values
    """),
    "halve-count-noise": ("count noise drawn at half the stated scale", """
        import dataclasses
        from dpmic_dask.privacy.mechanisms import base
        original = base.noisy_counts
        def noisy_counts(counts, plan):
            return original(counts, dataclasses.replace(plan, noise_scale=plan.noise_scale / 2))
        base.noisy_counts = noisy_counts
    """),
    "drop-histogram-noise": ("private bounds and the bounds check read exact histograms", """
        from dpmic_dask.release import histograms
        def noisy_histograms(counts, eps_column, sensitivity=2.0):
            return ([np.asarray(r, np.int64) for r in counts],
                    histograms.histogram_scale(eps_column, sensitivity))
        histograms.noisy_histograms = noisy_histograms
    """),
    "skip-the-charge": ("releases are never charged", """
        import sys
        import dpmic_dask
        from dpmic_dask.privacy import accounting
        from dpmic_dask.release import charge
        def charge_budget(cost, ledger, dataset, *, description, mechanism, columns=()):
            return accounting.Charge("mutant", dataset or "default", cost, description,
                                     0.0, mechanism, tuple(columns))
        original = charge.charge_budget
        for module in list(sys.modules.values()):  # every module that imported it by name
            if getattr(module, "charge_budget", None) is original:
                module.charge_budget = charge_budget
    """),
    "gauss-costs-pure": ("a Gaussian release is accounted as pure epsilon-DP", """
        from dpmic_dask.privacy.costs import PrivacyCost
        from dpmic_dask.privacy.mechanisms.gaussian import GaussianMechanism
        GaussianMechanism.cost = property(lambda self: PrivacyCost(self.epsilon))
    """),
    "halve-micr-sensitivity": ("noise calibrated to half MICr's sensitivity", """
        from dpmic_dask.stats import sensitivity
        from dpmic_dask.stats.statistics import micr
        original = sensitivity.micr_sensitivity
        micr.micr_sensitivity = lambda n: original(n) / 2
    """),
    "exact-top-k": ("top-k picks by exact scores, no selection noise", """
        from dpmic_dask.privacy import selection
        def select(self, n_pairs, scores=None, sensitivity=None):
            order = np.argsort(-np.asarray(scores, float), kind="stable")
            return tuple(int(i) for i in order[:min(self.k, n_pairs)])
        selection.NoisyTopK.select = select
    """),
    "charge-after-noise-refusal": ("the release part is calibrated only after the charge",
                                   """
        import sys
        import dpmic_dask
        from dpmic_dask.release import stages
        original = stages.check_plan
        def check_plan(request, n):
            return stages.grid_parameters(request, n)
        for module in list(sys.modules.values()):  # every module that imported it by name
            if getattr(module, "check_plan", None) is original:
                module.check_plan = check_plan
    """),
    "ledger-forgets-bad-events": ("ledgers ignore the bad-event delta of approximate parts",
                                  """
        from decimal import Decimal
        from dpmic_dask.privacy import accounting
        accounting.Budget.approx = lambda self, cost: Decimal(0)
    """),
    "unknown-threshold-for-all-columns": ("the bad-event chance is not split over columns",
                                          """
        from dpmic_dask.privacy import partition_selection
        from dpmic_dask.release import private_categories
        original = private_categories.plan_private_categories
        def plan_private_categories(eps, delta, mechanism, private, share=0.1):
            out = original(eps, delta, mechanism, private, share)
            unknown = sum(1 for v in private.values() if v is None)
            *costs, bad_event = out[2]
            return out[0], out[1], (*costs, bad_event * max(1, unknown))
        private_categories.plan_private_categories = plan_private_categories
        import sys
        for module in list(sys.modules.values()):
            if getattr(module, "plan_private_categories", None) is original:
                module.plan_private_categories = plan_private_categories
    """),
    "drop-selection-noise": ("categories chosen from exact counts (no noise)", """
        from dpmic_dask.privacy import partition_selection
        partition_selection.with_count_noise = lambda counts, noise: np.asarray(
            counts, dtype=np.int64)
    """),
    "bin-groups-apart": ("column groups binned from projections of their own", """
        from dpmic_dask.backends import dask as backend
        backend._binned_groups = lambda frame, specs: [backend._binned(frame, s)
                                                       for s in specs]
    """),
    "drop-step-cost": ("a front step's part is not taken from the values' budget", """
        from dpmic_dask.release import plan
        def take(self, share, what):
            part, _, _, _ = plan.split_front(self.rest, share, self.mechanism, what)
            self.taken.append(part)
            return part
        plan.FrontSplit.take = take
    """),
    "encode-twice": ("the executor converts every column to axis numbers twice", """
        from dpmic_dask.release import executor
        once = executor.axis_frame
        def twice(frame, kinds, **options):
            converted = once(frame, kinds, **options)
            return once(converted, kinds, keep=options.get("keep", ()))
        executor.axis_frame = twice
    """),
    "skip-bounding-per-unit": ("per unit, every row of a unit is kept (no bounding)", """
        from dpmic_dask.release import steps
        steps.bound_contributions = lambda frame, unit, k, columns, key=None: frame[
            [c for c in columns if c not in unit]]
    """),
    "row-sensitivity-per-unit": ("per unit, categories are chosen with row-level noise", """
        from dpmic_dask.release import private_categories
        private_categories.PrivateCategoriesPlan.sensitivity = property(lambda self: 2)
    """),
    "drop-partition-per-task": ("a counting task of several partitions skips its last", """
        import functools
        import dask
        from dpmic_dask.backends import dask as backend
        from dpmic_dask.backends import dasktasks
        from dpmic_dask.stats.counting import count_binned_partitions
        assert callable(backend.counted)  # the name the backend counts with (a refactor
        # that moves it must move this mutant too, or it would survive unapplied)
        def counted(binned, spec, group, split_every, take=None):
            count = dask.delayed(functools.partial(count_binned_partitions,
                                                   spec=spec, take=take), pure=True)
            leaves = [count(*[c for part in binned[i:i + max(1, group - 1)] for c in part])
                      for i in range(0, len(binned), group)]
            return dasktasks.tree_sum(leaves, max(2, split_every))
        backend.counted = counted
    """),
}

#: Mutants of the counting layout, which only the layout property test is asked
#: to catch (the privacy tests above do not vary how a table is split).
LAYOUT_TESTS = ["tests/integration/test_layouts.py::"
                "test_counts_and_values_do_not_depend_on_the_layout"]
#: The tests that guard the executor: every combination of steps, the plan's
#: accounting, the per-unit steps' noise, and releases per unit.
EXECUTOR_TESTS = ["tests/unit/test_executor_plan.py", "tests/integration/test_combinations.py",
                  "tests/statistical/test_units_front_steps.py",
                  "tests/statistical/test_units_noise.py", "tests/integration/test_units_kinds.py"]
TESTS = {"bin-groups-apart": LAYOUT_TESTS, "drop-partition-per-task": LAYOUT_TESTS,
         "drop-step-cost": EXECUTOR_TESTS, "encode-twice": EXECUTOR_TESTS,
         "skip-bounding-per-unit": EXECUTOR_TESTS, "row-sensitivity-per-unit": EXECUTOR_TESTS}


def plugin_source(patch: str) -> str:
    """A pytest plugin module that applies ``patch`` once the tests configure."""
    return "import numpy as np\n\n\ndef pytest_configure(config):\n" + textwrap.indent(
        textwrap.dedent(patch).strip() + "\n", "    ")


def run(name: str, tests: list[str]) -> tuple[bool, float, str]:
    """``(killed, seconds, first failing test)`` of one mutant."""
    _, patch = MUTANTS[name]
    with tempfile.TemporaryDirectory() as folder:
        Path(folder, "mutant_plugin.py").write_text(plugin_source(patch))
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([folder, str(ROOT)])}
        start = time.perf_counter()
        done = subprocess.run(
            [sys.executable, "-m", "pytest", "-x", "-q", "-n", "0", "-p", "no:cacheprovider",
             "-m", "", "-p", "mutant_plugin", "--hypothesis-profile=mutants", *tests],
            cwd=ROOT, env=env, capture_output=True, text=True)
        seconds = time.perf_counter() - start
    failed = next((line.split()[1] for line in done.stdout.splitlines()
                   if line.startswith(("FAILED ", "ERROR ")) and "::" in line), "")
    return done.returncode != 0, seconds, failed


def main() -> int:
    """Run the mutants named on the command line (all by default)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("names", nargs="*", help="mutants to run (default: all)")
    parser.add_argument("--list", action="store_true", help="list the mutants and exit")
    args = parser.parse_args()
    if args.list:
        for name, (what, _) in MUTANTS.items():
            print(f"{name:28s} {what}")
        return 0
    unknown = [n for n in args.names if n not in MUTANTS]
    if unknown:
        parser.error(f"unknown mutant(s): {', '.join(unknown)}")
    survivors = []
    for name in args.names or list(MUTANTS):
        killed, seconds, failed = run(name, TESTS.get(name, PRIVACY_TESTS))
        verdict = "killed " if killed else "SURVIVED"
        print(f"{verdict} {name:28s} {seconds:6.1f} s  {failed or MUTANTS[name][0]}", flush=True)
        if not killed:
            survivors.append(name)
    print(f"{len(survivors)} survivor(s)" + (f": {', '.join(survivors)}" if survivors else ""))
    return 1 if survivors else 0


if __name__ == "__main__":
    sys.exit(main())

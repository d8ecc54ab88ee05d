"""interrupts: a signal raises Interrupted once, or waits for a deferred step."""

import logging
import os
import signal

import pytest

from dpmic_dask.batch import interrupts


def test_a_signal_raises_interrupted_once_and_handlers_are_restored():
    before = signal.getsignal(signal.SIGTERM)
    ran_after = []
    with pytest.raises(interrupts.Interrupted) as info:
        with interrupts.signals_as_exceptions():
            try:
                os.kill(os.getpid(), signal.SIGTERM)
                ran_after.append("not reached")
            finally:
                os.kill(os.getpid(), signal.SIGINT)  # a second signal while cleaning up
                ran_after.append("clean-up")
    assert info.value.signum == signal.SIGTERM and info.value.exit_code == 143
    assert ran_after == ["clean-up"]
    assert signal.getsignal(signal.SIGTERM) is before
    assert logging.getLogger("distributed").disabled  # silenced for the way out
    for name in interrupts.NOISY_LOGGERS:
        logging.getLogger(name).disabled = False


def test_a_deferred_step_finishes_before_the_signal_is_raised():
    steps = []
    with pytest.raises(interrupts.Interrupted) as info:
        with interrupts.signals_as_exceptions():
            with interrupts.deferred():
                os.kill(os.getpid(), signal.SIGINT)
                steps.append("registered for clean-up")
            steps.append("not reached")
    assert steps == ["registered for clean-up"]
    assert info.value.exit_code == 130
    for name in interrupts.NOISY_LOGGERS:
        logging.getLogger(name).disabled = False


def test_without_the_handlers_deferred_does_nothing():
    with interrupts.deferred():
        pass
    assert not interrupts.interrupted()

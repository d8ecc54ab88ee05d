"""Reading a job file: TOML or YAML text into its sections (nothing checked yet).

:func:`read_job_file` turns every problem into one :class:`JobError` line naming
the file (and, for a parser error, the place): a job file is configuration,
not data, so its parser's position and reason are safe to show.
"""

from __future__ import annotations

import functools
import re
import tomllib
from pathlib import Path

import yaml

from dpmic_dask.errors import InvalidParameterError


class JobError(InvalidParameterError):
    """A job file is malformed; the message names the file and the key."""


#: Floats with an exponent and no dot or no exponent sign (``1e-1``, ``2.5e3``):
#: numbers in YAML 1.2, strings in YAML 1.1, which PyYAML follows.
_YAML_EXPONENT_FLOAT = re.compile(
    r"^[-+]?(?:[0-9][0-9_]*(?:\.[0-9_]*)?|\.[0-9][0-9_]*)[eE][-+]?[0-9]+$")


@functools.cache
def _yaml_loader():
    """PyYAML's safe loader, reading ``1e-1`` as the number YAML 1.2 says it is,
    and refusing a key repeated in one mapping (PyYAML keeps the last, so a
    second ``privacy:`` section would silently replace the first; TOML refuses)."""
    class JobLoader(yaml.SafeLoader):
        def construct_mapping(self, node, deep=False):
            if isinstance(node, yaml.MappingNode):
                seen: set = set()
                for key_node, _ in node.value:
                    if key_node.tag == "tag:yaml.org,2002:merge":
                        continue  # "<<: *anchor": merged keys may be given again here
                    key = self.construct_object(key_node, deep=True)
                    try:
                        repeated = key in seen
                        seen.add(key)
                    except TypeError:  # an unhashable key: the base class refuses it
                        continue
                    if repeated:
                        raise yaml.constructor.ConstructorError(
                            "while reading a mapping", node.start_mark,
                            f"the key {key!r} is given twice", key_node.start_mark)
            return super().construct_mapping(node, deep=deep)

    JobLoader.add_implicit_resolver("tag:yaml.org,2002:float", _YAML_EXPONENT_FLOAT,
                                    list("-+0123456789."))
    return JobLoader


def read_job_file(path: Path) -> dict:
    """The sections of a TOML or YAML job file (a YAML 1.2 float reading; a UTF-8
    byte-order mark dropped); a file that cannot be read or parsed is one line."""
    try:
        text = path.read_text(encoding="utf-8-sig")  # a leading byte-order mark is dropped
    except OSError as exc:
        raise JobError(f"{path}: cannot read the job file ({exc.strerror})") from None
    except UnicodeDecodeError:
        raise JobError(f"{path}: the job file is not UTF-8 text; save it as UTF-8") from None
    # A job file is configuration, not data: its parser's position and reason
    # are safe to show.
    if path.suffix in (".yaml", ".yml"):
        try:
            data = yaml.load(text, Loader=_yaml_loader())  # noqa: S506 - a safe loader
        except yaml.MarkedYAMLError as exc:
            mark = exc.problem_mark or exc.context_mark
            where = f"line {mark.line + 1}, column {mark.column + 1}" if mark else "unknown place"
            reason = exc.problem or exc.context
            raise JobError(f"{path}: not valid YAML at {where}: {reason}") from None
        except yaml.YAMLError as exc:
            raise JobError(f"{path}: not valid YAML ({exc.__class__.__name__})") from None
    else:
        try:
            data = tomllib.loads(text)
        except tomllib.TOMLDecodeError as exc:
            raise JobError(f"{path}: not valid TOML: {exc}") from None
    if not isinstance(data, dict):
        raise JobError(f"{path}: a job file must be a table of sections")
    return data

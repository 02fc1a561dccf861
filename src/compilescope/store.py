"""The results store: one SQLite file, one row per finished trial, queryable.

Each row holds the trial's JSON record unchanged (``result``, the same schema as a results
file) beside columns to query by: workload, strategy, start mode, backend, status, and the
environment the trial ran in (torch version, host, device). A row's key is a hash of the
trial spec and the torch version and device, so a sweep that resumes skips exactly the
trials already finished in that environment, whichever host of a cluster ran them.

    sqlite3 results.sqlite "select workload, label, status, json_extract(result, '$.process_s') from trials"
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import hashlib
import json
import sqlite3
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from .errors import CompilescopeError
from .options import check_where_column
from .model import RunResult, TrialEnv, TrialResult, TrialSpec
from .schema import SCHEMA_VERSION, from_data, migrate_trial, to_data

SCHEMA = """
create table if not exists trials (
    key text primary key,
    sweep text not null,
    workload text not null,
    strategy text not null,
    label text not null,
    cache text not null,
    backend text not null,
    status text not null,
    torch text not null,
    host text not null,
    device text not null,
    stream text not null,
    spec text not null,
    result text not null,
    finished text not null,
    schema_version integer not null
);
create index if not exists trials_workload on trials (workload, strategy);
"""


class StoreError(CompilescopeError):
    """A file that cannot be opened as a results store (``--where`` text: :mod:`compilescope.options`)."""


LOCK_WAIT_S = 10.0  # how long a store another process holds is waited for before it is reported as locked


@contextlib.contextmanager
def _reading(path: Path, wait_s: float) -> Iterator[None]:
    """SQLite's errors as one line naming the store: locked by another process (after the
    bounded wait), damaged (a corrupted page, a dropped table), or not a store at all."""
    try:
        yield
    except sqlite3.OperationalError as exc:
        text = str(exc)
        if "locked" in text or "busy" in text:
            raise StoreError(f"results store {path} is locked by another process (waited {wait_s:g} s): "
                             "try again when it has finished") from None
        raise StoreError(f"results store {path} cannot be read: {text}") from None
    except sqlite3.DatabaseError as exc:
        raise StoreError(f"{path} is not a compilescope results store, or is damaged: {exc}") from None


# a TrialSpec field (dotted: a field of one of its records) → its default, as data
KEY_FIELDS_ADDED: dict[str, object] = {"startup": [], "measure.python": None}


def drop_added_defaults(data: dict[str, object]) -> dict[str, object]:
    """A spec's data without the fields of :data:`KEY_FIELDS_ADDED` that hold their default."""
    for name, default in KEY_FIELDS_ADDED.items():
        *path, last = name.split(".")
        holder: object = data
        for part in path:
            holder = holder.get(part) if isinstance(holder, dict) else None
        if isinstance(holder, dict) and last in holder and holder[last] == default:
            del holder[last]
    return data


OPTION_FIELDS_ADDED: dict[str, object] = {"config": ""}  # a StrategyOptions field → its default, as data


def trial_key(spec: TrialSpec, torch_version: str) -> str:
    """The identity of a trial in the store: its spec, the torch version and the device. A spec
    field added since stores were first written is left out while it has its default, so a
    store an older compilescope wrote keeps its keys (its trials are still skipped on resume)."""
    data = drop_added_defaults(to_data(spec))
    for name, default in OPTION_FIELDS_ADDED.items():
        if isinstance(data.get("options"), dict) and data["options"].get(name) == default:
            del data["options"][name]
    text = json.dumps({"spec": data, "torch": torch_version, "device": spec.measure.device}, sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:32]


APPLICATION_ID = int.from_bytes(b"CmSc", "big")  # ``PRAGMA application_id`` of every store we create
STORE_COLUMNS = {"key", "sweep", "workload", "strategy", "label", "cache", "backend", "status", "torch", "host",
                 "device", "stream", "spec", "result", "finished", "schema_version"}


class Store:
    """A results store. ``readonly`` (``report``, ``compare``): opened with SQLite's
    ``mode=ro``, so reading never changes the file. Either way a SQLite file that is not a
    compilescope store is refused, never written: ours carry ``application_id`` ``CmSc``
    (stores from before it are recognised by their ``trials`` table)."""

    def __init__(self, path: str | Path, *, readonly: bool = False, wait_s: float | None = None) -> None:
        self.path = Path(path)
        self.readonly = readonly
        self.wait_s = LOCK_WAIT_S if wait_s is None else wait_s
        self.warnings: list[str] = []  # environments that differ, found by :meth:`add`
        try:
            if readonly:
                from urllib.parse import quote

                uri = f"file:{quote(str(self.path.absolute()))}?mode=ro"
                self.db = sqlite3.connect(uri, uri=True, timeout=self.wait_s)
            else:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                self.db = sqlite3.connect(str(self.path), timeout=self.wait_s)
        except sqlite3.DatabaseError as exc:
            raise StoreError(f"cannot open results store {self.path}: {exc}") from None
        except OSError as exc:
            raise StoreError(f"cannot open results store {self.path}: {exc.strerror}") from None
        try:
            with self._reading():
                self._check_ours()
                self._check_intact()
                if not readonly:
                    self.db.executescript(SCHEMA)
                    self.db.execute(f"pragma application_id = {APPLICATION_ID}")
                    self.db.commit()
        except StoreError:
            self.db.close()
            raise

    def _reading(self) -> contextlib.AbstractContextManager[None]:
        return _reading(self.path, self.wait_s)

    def _check_intact(self) -> None:
        """Every page readable (``pragma quick_check``) and, in a store of ours, the trials table
        whole: a damaged store is refused before a sweep runs its first trial."""
        problems = [row[0] for row in self.db.execute("pragma quick_check")]
        if problems != ["ok"]:
            raise StoreError(f"results store {self.path} is damaged: {'; '.join(map(str, problems[:3]))}")
        (app_id,) = self.db.execute("pragma application_id").fetchone()
        if app_id == APPLICATION_ID:
            columns = {row[1] for row in self.db.execute("pragma table_info(trials)")}
            missing = sorted(STORE_COLUMNS - columns)
            if not columns:
                raise StoreError(f"results store {self.path} has lost its trials table: nothing to read or add to")
            if missing:
                raise StoreError(f"results store {self.path} is damaged: its trials table lacks {', '.join(missing)}")

    def _check_ours(self) -> None:
        (app_id,) = self.db.execute("pragma application_id").fetchone()
        if app_id == APPLICATION_ID:
            return
        if app_id != 0:
            raise StoreError(f"{self.path} is not a compilescope results store (SQLite application_id "
                             f"{app_id:#x}, not {APPLICATION_ID:#x})")
        tables = {row[0] for row in self.db.execute("select name from sqlite_master where type = 'table'")}
        if "trials" in tables:
            columns = {row[1] for row in self.db.execute("pragma table_info(trials)")}
            if STORE_COLUMNS <= columns:
                return  # a store written before application_id was set
        if tables or self.readonly:
            shown = ", ".join(sorted(tables)[:5]) or "no tables"
            raise StoreError(f"{self.path} is not a compilescope results store (it holds {shown})")

    def close(self) -> None:
        self.db.close()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def finished_keys(self) -> set[str]:
        with self._reading():
            return {row[0] for row in self.db.execute("select key from trials")}

    def add(self, result: TrialResult, *, torch_version: str, sweep: str = "") -> str:
        """Insert (or replace) one finished trial, committed at once. When the store's other
        trials of this workload and stream ran in an environment that differs (torch, device,
        threads, a torch-affecting variable), :attr:`warnings` says so, once per difference."""
        with self._reading():
            return self._add(result, torch_version, sweep)

    def _add(self, result: TrialResult, torch_version: str, sweep: str) -> str:
        spec = result.spec
        key = trial_key(spec, torch_version)
        env = result.env
        self._check_env(result, key)
        row = {
            "key": key, "sweep": sweep, "workload": spec.workload, "strategy": spec.name, "label": spec.label,
            "cache": spec.cache, "backend": spec.options.backend, "status": result.status, "torch": torch_version,
            "host": env.host, "device": spec.measure.device, "stream": json.dumps(to_data(spec.stream)),
            "spec": json.dumps(to_data(spec)), "result": json.dumps(to_data(result)),
            "finished": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
            "schema_version": SCHEMA_VERSION,
        }
        names = ", ".join(row)
        marks = ", ".join("?" for _ in row)
        with self.db:
            self.db.execute(f"insert or replace into trials ({names}) values ({marks})", tuple(row.values()))
        return key

    def _check_env(self, result: TrialResult, key: str) -> None:
        stream = json.dumps(to_data(result.spec.stream))
        rows = self.db.execute(
            "select distinct json_extract(result, '$.env.torch'), json_extract(result, '$.env.device'), "
            "json_extract(result, '$.env.threads'), json_extract(result, '$.env.variables') from trials "
            "where workload = ? and stream = ? and key != ?", (result.spec.workload, stream, key))
        for torch_version, device, threads, variables in rows:
            stored = TrialEnv(
                torch=str(torch_version or ""), device=str(device or ""),
                threads=int(threads) if str(threads).isdigit() else None,
                # a trial stored before variables were recorded: unknown, not "none"
                variables=json.loads(variables) if isinstance(variables, str) else result.env.variables)
            for difference in stored.differences(result.env):
                warning = (f"{result.spec.workload} {result.spec.label} joins trials in the store that ran in "
                           f"another environment: {difference} (A the store's, B this one's)")
                if warning not in self.warnings:
                    self.warnings.append(warning)

    def trials(self, where: Sequence[tuple[str, str]] = ()) -> list[TrialResult]:
        """Finished trials matching every ``column = value`` filter, oldest first."""
        clauses, values = [], []
        for column, value in where:
            clauses.append(f"{check_where_column(column)} = ?")
            values.append(value)
        sql = "select result, schema_version from trials" + (" where " + " and ".join(clauses) if clauses else "") + " order by rowid"
        out = []
        with self._reading():
            rows = self.db.execute(sql, values).fetchall()
        for text, version in rows:
            try:
                data = json.loads(text)
            except (TypeError, ValueError):
                raise StoreError(f"results store {self.path} is damaged: a trial's result is not JSON") from None
            out.append(from_data(TrialResult, migrate_trial(data, version, f"{self.path} (a trial)")))
        return out

    def runs(self, where: Sequence[tuple[str, str]] = ()) -> list[RunResult]:
        """The matching trials grouped into runs: one per (workload, stream, backend, torch)."""
        groups: dict[tuple[Any, ...], list[TrialResult]] = {}
        for t in self.trials(where):
            key = (t.spec.workload, json.dumps(to_data(t.spec.stream)), t.spec.options.backend,
                   t.env.torch)
            groups.setdefault(key, []).append(t)
        return [RunResult(workload=k[0], stream=ts[0].spec.stream, trials=tuple(ts), command=f"store {self.path}")
                for k, ts in groups.items()]

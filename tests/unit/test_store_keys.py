"""A store's trial keys survive additive changes to the trial spec: a store an older
compilescope wrote is still resumed (its trials skipped), not run again."""

import dataclasses
import hashlib
import json

from compilescope.model import StrategyOptions, TrialSpec
from compilescope.schema import to_data
from compilescope.store import KEY_FIELDS_ADDED, OPTION_FIELDS_ADDED, trial_key


def _key_without(spec: TrialSpec, fields: set[str]) -> str:
    """The key as a compilescope whose TrialSpec (and StrategyOptions) had none of ``fields``
    (dotted: a field of a record of it) and of :data:`OPTION_FIELDS_ADDED` computed it."""
    data = to_data(spec)
    for name in fields:
        *path, last = name.split(".")
        holder = data
        for part in path:
            holder = holder[part]
        del holder[last]
    data["options"] = {k: v for k, v in data["options"].items() if k not in OPTION_FIELDS_ADDED}
    text = json.dumps({"spec": data, "torch": "2.13.0", "device": spec.measure.device}, sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def test_a_spec_without_the_added_fields_keeps_its_older_key():
    spec = TrialSpec("sincos", "default", "cold", ({"n": 16}, {"n": 32}), StrategyOptions(backend="eager"))
    assert trial_key(spec, "2.13.0") == _key_without(spec, set(KEY_FIELDS_ADDED))


def test_an_added_field_with_a_value_makes_another_trial():
    spec = TrialSpec("sincos", "default", "cold", ({"n": 16},))
    warmed = dataclasses.replace(spec, startup=({"n": 8},))
    assert trial_key(warmed, "2.13.0") != trial_key(spec, "2.13.0")


def test_every_added_field_default_is_the_specs_own():
    spec = to_data(TrialSpec("sincos", "default", "cold", ({"n": 16},)))

    def at(name):
        value = spec
        for part in name.split("."):
            value = value[part]
        return value

    assert {name: at(name) for name in KEY_FIELDS_ADDED} == KEY_FIELDS_ADDED



def test_an_options_field_added_keeps_older_keys_and_its_value_makes_another_trial():
    spec = TrialSpec("sincos", "default", "cold", ({"n": 16},), StrategyOptions(backend="eager"))
    hinted = dataclasses.replace(spec, options=StrategyOptions(backend="eager", config="capture_scalar_outputs=True"))
    assert trial_key(hinted, "2.13.0") != trial_key(spec, "2.13.0")
    assert {n: to_data(spec)["options"][n] for n in OPTION_FIELDS_ADDED} == OPTION_FIELDS_ADDED


def test_another_interpreter_makes_another_trial():
    spec = TrialSpec("sincos", "default", "cold", ({"n": 16},))
    other = dataclasses.replace(spec, measure=dataclasses.replace(spec.measure, python="/opt/torch-2.10/bin/python"))
    assert trial_key(other, "2.13.0") != trial_key(spec, "2.13.0")

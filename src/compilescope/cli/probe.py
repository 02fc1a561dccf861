"""``compilescope probe``: parse the options, call :func:`compilescope.app.probe.probe_script`
(or ``probe_trace``), write the probe JSON and the shape stream, render the report; exit as
the script did."""

from __future__ import annotations

from pathlib import Path

import click

from ..errors import OptionError
from .common import STDOUT, check_kinds, check_outputs, console, outputs, results_out, say, show, shown, \
    stdout_output, write_text
from .options import complete_script, options
from .root import cli

PROBE_OPTIONS = ("--json", "--stream-out", "--record-shapes", "--trace", "--strict", "--check-fixes", "--config",
                 "--html", "--perfetto", "--out")  # probe's own, which after the script are the script's
IGNORED_AT_START: set[int] = set()  # ignored when compilescope started (nohup, `&`): kept so for a probed program


@cli.command("probe", context_settings={"allow_interspersed_args": False})
@click.option("--json", "json_path", type=click.Path(dir_okay=False, path_type=Path), help="write the probe JSON.")
@click.option("--stream-out", type=click.Path(dir_okay=False, path_type=Path),
              help="write the input shapes seen as a stream for `run --stream @FILE`.")
@click.option("--record-shapes", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="write every compiled call's input shapes, dtypes and scalars (the script's main thread) "
                   "as a stream; one file per compiled function when there are several.")
@click.option("--trace", "trace_dir", type=click.Path(path_type=Path), help="read a TORCH_TRACE directory instead.")
@click.option("--strict", is_flag=True, help="with --trace: fail when any event was unknown or malformed.")
@click.option("--check-fixes", is_flag=True,
              help="run the script again under each setting fix of its causes (as advise --script does) and "
                   "print a fix only as its run judged it: one that changed nothing is replaced by what it found.")
@click.option("--config", "settings", multiple=True, metavar="NAME=VALUE",
              help="run the script with a setting applied (repeatable): dynamic_sources, recompile_limit, "
                   "automatic_dynamic_shapes, assume_static_by_default, capture_dynamic_output_shape_ops, "
                   "capture_scalar_outputs, force_parameter_static_shapes, inductor.NAME; VALUE is JSON or text. The report names them.")
@options("probe-html")
@click.argument("script", required=False, shell_complete=complete_script)
@click.argument("args", nargs=-1, type=click.UNPROCESSED)
def probe_command(json_path: Path | None, stream_out: Path | None, record_shapes: Path | None,
                  trace_dir: Path | None, strict: bool, check_fixes: bool, settings: tuple[str, ...],
                  html_path: Path | None,
                  perfetto_path: Path | None, outs: tuple[Path, ...], script: str | None,
                  args: tuple[str, ...]) -> int:
    """Run SCRIPT ARGS… as `python SCRIPT ARGS…` would and explain every compile, recompile and
    graph break; or read an existing TORCH_TRACE directory with --trace. Probe options go
    before SCRIPT (`--` ends them); every argument after SCRIPT is the script's. The report
    goes to stderr; the exit status (or the signal that ended it) is the script's."""
    from ..app.probe import checked_fixes, probe_script, probe_trace, shape_stream
    from ..options import check_writable
    from ..render import json as json_render
    from ..report import ProbeFile

    if (script is None) == (trace_dir is None):
        raise click.UsageError("give a SCRIPT to run or --trace DIR (one of them)")
    if strict and trace_dir is None:
        raise OptionError("--strict applies to --trace DIR (a trace's unknown or malformed events), not to a script")
    if check_fixes and (trace_dir is not None or settings):
        raise OptionError("--check-fixes runs a SCRIPT again under each fix alone: not with --trace or --config")
    chosen, json_path = results_out(outputs(outs, html=html_path, perfetto=perfetto_path), json_path)
    check_kinds(chosen, ProbeFile, "a probe")
    if record_shapes is not None:
        from ..paths import check_recording

        if trace_dir is not None:
            raise OptionError("--record-shapes records a running script, not a --trace directory")
        if record_shapes == STDOUT:
            raise OptionError("--record-shapes cannot be `-`: stdout is the script's (and several functions "
                              "make several files); give a path")
        check_recording(record_shapes)  # a bad path is an error before the script starts
    if STDOUT in (json_path, stream_out, html_path, perfetto_path) and trace_dir is None:
        raise OptionError("probe's outputs cannot be `-`: stdout is the script's; give a file")
    stdout_output(json=json_path, **{"stream-out": stream_out}, html=html_path, perfetto=perfetto_path)
    for path, what in ((json_path, "probe JSON"), (stream_out, "shape stream")):
        if path not in (None, STDOUT):
            check_writable(path, what)
    check_outputs(chosen, others=[(json_path, "--json"), (stream_out, "--stream-out"),
                                  (record_shapes, "--record-shapes")],
                  inputs=[(script, "the script")])
    if trace_dir is not None:
        probed = probe_trace(trace_dir, strict=strict)
    else:
        assert script is not None
        probed = probe_script(script, args, settings=settings, json_path=json_path,
                              ignored_signals=IGNORED_AT_START, record_shapes=record_shapes)
    file = probed.file
    out = console(stderr=True)
    if json_path is not None:  # the records first: a rendering fault never loses them
        write_text(json_path, json_render.render_probe(file.result, file.report))
        if probed.journal is not None:
            probed.journal.unlink(missing_ok=True)
    stream_text = shape_stream(file) if stream_out is not None else None
    if stream_out is not None and stream_text is not None:
        write_text(stream_out, stream_text)
    if check_fixes and script is not None:
        file = checked_fixes(script, list(args), file,
                             lambda label: say(out, f"checking a fix: the script again under {label}", "dim"))
    show(file, out, chosen)
    if json_path is not None:
        say(out, f"probe JSON: {shown(json_path)}")
    if stream_out is not None and stream_text is not None:
        say(out, f"shape stream: {shown(stream_out)}")
    elif stream_out is not None:
        say(out, f"shape stream not written to {shown(stream_out)}: a call passed no tensor the probe records as an "
                 "argument, list, tuple or dict (one inside an object, a dataclass say): --record-shapes records "
                 "those", "yellow")
    if record_shapes is not None:
        say(out, f"recorded shapes: {shown(record_shapes)} (per function, {record_shapes.stem}.<function>"
                 f"{record_shapes.suffix} when several)")
    if probed.returncode is None:
        return file.result.exit_code
    mistaken = [a for a in args if a.split("=", 1)[0] in PROBE_OPTIONS]
    if mistaken and json_path is None:  # `probe s.py --json x`: the script got it, as under python
        named = mistaken[0].split("=", 1)[0]
        say(out, f"note: {', '.join(dict.fromkeys(a.split('=', 1)[0] for a in mistaken))} after the script went to "
                 f"the script, as under `python` — probe options go before it (`compilescope probe {named} … "
                 f"{script} …`); no probe JSON was written", "yellow")
    from ..probe.launch import end_as

    return end_as(probed.returncode)

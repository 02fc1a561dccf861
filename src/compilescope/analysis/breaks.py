"""PyTorch's graph-break text, split into its parts.

Since torch 2.7 a graph break's reason reads::

    Failed to trace builtin operator
      Explanation: Dynamo does not know how to trace builtin operator `print` …
      Hint: Avoid calling builtin `print` …
      Hint: If you are attempting to call a logging function …

      Developer debug context: builtin print […] False

     For more details about this graph break, please visit: https://…/gb0059.html

(checked on 2.13). The record keeps the whole text; a report shows the first line with the
hints, and the HTML everything. Older reasons are one line: no explanation, no hints.
"""

from __future__ import annotations

from dataclasses import dataclass

_LABELS = {
    "Explanation:": "explanation",
    "Hint:": "hint",
    "Developer debug context:": "context",
    "For more details about this graph break, please visit:": "url",
}


# what follows the break's own text in a TORCH_TRACE payload (torch 2.13)
_AFTER_THE_TEXT = ("User code traceback:", "Traceback (most recent call last):", "Stack variable source attribution:")


@dataclass(frozen=True)
class BreakText:
    headline: str
    explanation: str | None = None
    hints: tuple[str, ...] = ()
    context: str | None = None
    url: str | None = None


def split_break_text(text: str) -> BreakText:
    """The first line, the explanation, each hint, the debug context and the link; a line that
    starts with none of PyTorch's labels continues the part before it."""
    lines = [ln.strip() for ln in text.strip().splitlines()]
    if not lines:
        return BreakText("")
    parts: list[tuple[str, str]] = []
    for line in lines[1:]:
        if line.startswith(_AFTER_THE_TEXT):  # a trace's payload goes on with stacks, whose
            break  # last exception repeats the text: its hints are not new ones
        if not line:
            continue
        label = next((lab for lab in _LABELS if line.startswith(lab)), None)
        if label is not None:
            parts.append((_LABELS[label], line[len(label):].strip()))
        elif parts:
            parts[-1] = (parts[-1][0], f"{parts[-1][1]} {line}")
        else:
            parts.append(("explanation", line))
    first = {kind: value for kind, value in reversed(parts)}
    return BreakText(lines[0], first.get("explanation"), tuple(dict.fromkeys(v for k, v in parts if k == "hint")),
                     first.get("context"), first.get("url"))

"""PyTorch's graph-break text split into its parts (compilescope.analysis.breaks)."""

from __future__ import annotations

from compilescope.analysis.breaks import split_break_text

# a TORCH_TRACE payload's reason (torch 2.13): the text, then the stacks, whose last exception
# message repeats the text — hints included
TRACE_REASON = """Call to `torch._dynamo.graph_break()`
  Explanation: User-inserted graph break. Message: None
  Hint: Remove the `torch._dynamo.graph_break()` call.

  Developer debug context: Called `torch._dynamo.graph_break()` with args `[]`, kwargs `{}`

 For more details about this graph break, please visit: https://example.invalid/gb0025.html
User code traceback:
  File "/tmp/s.py", line 4, in f
    torch._dynamo.graph_break()
Traceback (most recent call last):
  File "/x/torch/_dynamo/symbolic_convert.py", line 1076, in wrapper
torch._dynamo.exc.Unsupported: Call to `torch._dynamo.graph_break()`
  Explanation: User-inserted graph break. Message: None
  Hint: Remove the `torch._dynamo.graph_break()` call.
  Hint: A hint only the stack's copy has.
"""


def test_a_trace_payloads_stacks_are_not_read_as_more_of_the_text():
    parts = split_break_text(TRACE_REASON)
    assert parts.headline == "Call to `torch._dynamo.graph_break()`"
    assert parts.hints == ("Remove the `torch._dynamo.graph_break()` call.",)  # once, and none from the stack
    assert parts.url == "https://example.invalid/gb0025.html"  # the stack is not appended to it
    assert parts.context == "Called `torch._dynamo.graph_break()` with args `[]`, kwargs `{}`"


def test_a_hint_said_twice_in_the_text_is_shown_once():
    parts = split_break_text("Headline\n  Hint: a\n  Hint: b\n  Hint: a\n")
    assert parts.hints == ("a", "b")

"""The build's warnings are counted by kind; the console line names the commonest with what they mean."""

import warnings

from orchestra.pipeline.build_warnings import WARNINGS_FILE, summary_line, warning_kinds, write_warnings


def _caught() -> list:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for name in ("scale", "advect", "diffuse"):
            warnings.warn(f'Nested SDFG "{name}" was not inlined because its connectors [\'q\'] describe a window')
        warnings.warn("Incompatible strides: inner (__q_I_stride, __q_J_stride) - outer (12, 1)")
        warnings.warn("Loop at model.py:12 will be implicitly unrolled.", SyntaxWarning)
    return caught


def test_kinds_blank_the_names_and_count_most_frequent_first():
    kinds = warning_kinds(_caught())
    assert [kind.count for kind in kinds] == [3, 1, 1]
    assert kinds[0].template == "Nested SDFG … was not inlined because its connectors … describe a window"
    assert kinds[0].notes[0] == "gt4py freezing stencils; harmless"
    assert kinds[0].origin.endswith("test_build_warnings.py")
    assert {kind.category for kind in kinds} == {"UserWarning", "SyntaxWarning"}
    assert next(k for k in kinds if k.category == "SyntaxWarning").template == "Loop at model.py:… will be implicitly unrolled."


def test_the_console_line_and_the_log_say_the_same(tmp_path):
    kinds = write_warnings(_caught(), tmp_path)
    line = summary_line(kinds, shown=2)
    assert line.startswith("5 warning(s) of 3 kind(s) from DaCe/gt4py while building: 3x 'Nested SDFG")
    assert "Warning" not in line  # the console stays free of DaCe's and gt4py's warning names
    assert "(gt4py freezing stencils; harmless)" in line and "1 more kind(s)" in line
    text = (tmp_path / WARNINGS_FILE).read_text().splitlines()
    assert text[0] == "5 warning(s) of 3 kind(s):"
    assert "note: gt4py's freezing of each stencil" in text[2]
    assert sum('Nested SDFG "' in t for t in text) == 3  # and then every warning as raised

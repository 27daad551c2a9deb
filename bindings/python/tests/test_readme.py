"""The README's example runs and prints what its comments say."""
import contextlib
import io
import os
import re

HERE = os.path.dirname(os.path.abspath(__file__))


def test_readme_example(tmp_path):
    text = open(os.path.join(HERE, "..", "README.md")).read()
    code = re.search(r"```python\n(.*?)```", text, re.S).group(1)
    assert '"/tmp/pydb"' in code
    code = code.replace('"/tmp/pydb"', repr(str(tmp_path / "pydb")))
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code, "README.md", "exec"), {})
    assert out.getvalue() == "b'alice' b'1'\nb'bob' b'2'\n"

"""The type stub _tidesdb.pyi names exactly the extension's public names
and methods, so it cannot drift from the C code."""
import ast
import os

import tidesdb
import tidesdb._tidesdb as ext


def test_stub_matches_extension():
    stub = os.path.join(os.path.dirname(tidesdb.__file__), "_tidesdb.pyi")
    tree = ast.parse(open(stub).read())
    names = {n.name for n in tree.body if isinstance(n, (ast.ClassDef, ast.FunctionDef))}
    names |= {n.target.id for n in tree.body if isinstance(n, ast.AnnAssign)}
    public = {x for x in dir(ext) if not x.startswith("_")}
    assert names - {"Buffer"} == public
    for cls in tree.body:
        if not isinstance(cls, ast.ClassDef) or cls.name.endswith("Error"):
            continue
        stubbed = {f.name for f in cls.body if isinstance(f, ast.FunctionDef)}
        real = {x for x in dir(getattr(ext, cls.name)) if not x.startswith("_")}
        assert {x for x in stubbed if not x.startswith("_")} == real, cls.name
    assert os.path.exists(os.path.join(os.path.dirname(tidesdb.__file__), "py.typed"))

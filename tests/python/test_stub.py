"""The type stubs (devshare/_devshare.pyi) describe the extension exactly: the
same names, the same members of every class, and the same parameters."""
import ast
import pathlib
import re

import pytest

import devshare
from devshare import _devshare

STUB = pathlib.Path(devshare.__file__).with_name("_devshare.pyi")
# Members every pybind11 class has, or that stubs leave to `object`.
IMPLICIT = {"__doc__", "__module__", "__repr__", "__dict__", "__weakref__", "_pybind11_conduit_v1_"}
SIGNATURE = re.compile(r"^\w+\((.*)\) -> ")


def stub_tree():
    return ast.parse(STUB.read_text())


def stub_only(node: ast.stmt) -> bool:
    """A class of the stubs alone (@type_check_only): a base sharing members."""
    return isinstance(node, ast.ClassDef) and any(
        isinstance(d, ast.Name) and d.id == "type_check_only" for d in node.decorator_list)


def stub_members(cls: ast.ClassDef) -> dict:
    """Its members, with those of its stub-only bases."""
    bases = {node.name: node for node in stub_tree().body if stub_only(node)}
    members = {}
    for base in cls.bases:
        if isinstance(base, ast.Name) and base.id in bases:
            members.update(stub_members(bases[base.id]))
    for node in cls.body:
        if isinstance(node, ast.FunctionDef):
            members[node.name] = node
        elif isinstance(node, ast.AnnAssign):
            members[node.target.id] = node
    return members


def runtime_members(cls: type) -> set:
    names = set()
    for name, value in vars(cls).items():
        if name in IMPLICIT:
            continue
        if name == "__init__" and type(value).__name__ == "wrapper_descriptor":
            continue  # no constructor: pybind11's refusing __init__
        names.add(name)
    return names


def pybind_parameters(function) -> list:
    """(name, positional-only) of each parameter pybind11's signature line
    shows, self excluded; pybind11 calls parameters it was not told the name
    of arg0, arg1, ..."""
    line = function.__doc__.strip().splitlines()[0]
    text = SIGNATURE.match(line).group(1)
    depth, part, parts = 0, "", []
    for ch in text:
        if ch in "[(":
            depth += 1
        elif ch in "])":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append(part)
            part = ""
        else:
            part += ch
    if part.strip():
        parts.append(part)
    names = [p.split(":")[0].strip() for p in parts]
    if names and names[0] == "self":
        names = names[1:]
    return [(n, bool(re.fullmatch(r"arg\d+", n))) for n in names]


def stub_parameters(node: ast.FunctionDef, method: bool) -> list:
    args = node.args
    positional_only = [(a.arg, True) for a in args.posonlyargs]
    rest = [(a.arg, False) for a in args.args]
    both = positional_only + rest
    return both[1:] if method else both


def check_signature(function, node: ast.FunctionDef, method: bool, where: str):
    runtime = pybind_parameters(function)
    stub = stub_parameters(node, method)
    assert len(runtime) == len(stub), f"{where}: {runtime} != {stub}"
    for (r_name, r_unnamed), (s_name, s_posonly) in zip(runtime, stub):
        if r_unnamed:
            assert s_posonly, f"{where}: {s_name} is positional-only (pybind11 names it {r_name})"
        else:
            assert (r_name, False) == (s_name, s_posonly), f"{where}: {r_name} != {s_name}"


def test_every_name_is_in_the_stub_and_the_module():
    tree = stub_tree()
    stubbed = set()
    for node in tree.body:
        if stub_only(node):
            continue
        if isinstance(node, (ast.ClassDef, ast.FunctionDef)):
            stubbed.add(node.name)
        elif isinstance(node, ast.AnnAssign):
            stubbed.add(node.target.id)
    runtime = {n for n in vars(_devshare) if not n.startswith("__")} | {"__version__"}
    assert stubbed == runtime


def classes():
    return [node for node in stub_tree().body if isinstance(node, ast.ClassDef) and not stub_only(node)]


@pytest.mark.parametrize("node", classes(), ids=lambda n: n.name)
def test_every_member_and_parameter_matches(node):
    cls = getattr(_devshare, node.name)
    if issubclass(cls, Exception):
        return
    members = stub_members(node)
    assert set(members) == runtime_members(cls), node.name
    for name, member in members.items():
        value = vars(cls)[name]
        if name == "__hash__":
            assert value is None, f"{node.name} is unhashable in the stub"
            continue
        if isinstance(member, ast.FunctionDef) and any(
                isinstance(d, ast.Name) and d.id == "property" for d in member.decorator_list):
            assert isinstance(value, property), f"{node.name}.{name} is a read-only property"
            assert value.fset is None, f"{node.name}.{name} is read-only"
            continue
        if isinstance(member, ast.AnnAssign):
            assert isinstance(value, property) and value.fset is not None, \
                f"{node.name}.{name} is a writable attribute"
            continue
        if name in ("__eq__", "__getitem__", "__contains__", "__iter__", "__len__"):
            continue  # operators: pybind11 names their parameter arg0
        check_signature(value, member, True, f"{node.name}.{name}")


def test_every_function_signature_matches():
    for node in stub_tree().body:
        if isinstance(node, ast.FunctionDef):
            check_signature(getattr(_devshare, node.name), node, False, node.name)

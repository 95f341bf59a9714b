"""Reading a scenario (or any input) file: UTF-8 YAML text in, plain data out, with bounded work.

Whatever the file holds, reading it either gives plain data or raises one
``ScenarioError``: a file that is too large, not a regular file, binary, UTF-16
or not UTF-8; YAML that does not parse, holds more than one document, repeats a
key (the last one would silently win), nests too deeply, refers to itself, or
expands through aliases ("billion laughs") beyond a bounded size.
"""

from pathlib import Path
from typing import Any

import yaml

from twin.errors import ScenarioError
from twin.units import MAX_INT_DIGITS

# Limits on a scenario file (docs/scenario.md, "Limits"). A hand-written scenario is a
# few kilobytes, a generated one with a long job list a few hundred.
MAX_FILE_BYTES = 1 << 20                 # 1 MiB
MAX_DEPTH = 32                           # nesting of mappings and lists
MAX_EXPANDED_NODES = 200_000             # YAML nodes after aliases are expanded

_INT_TAG = "tag:yaml.org,2002:int"
_BOMS = {b"\xff\xfe\x00\x00": "UTF-32", b"\x00\x00\xfe\xff": "UTF-32", b"\xff\xfe": "UTF-16", b"\xfe\xff": "UTF-16"}


def read_text(path: str | Path) -> str:
    """The text of a scenario file; anything but a small UTF-8 text file is a ScenarioError."""
    path = Path(path)
    try:
        if not path.is_file():
            what = "does not exist" if not path.exists() else "is not a regular file"
            raise ScenarioError("", f"cannot read scenario file '{path}': it {what}")
        with path.open("rb") as f:
            data = f.read(MAX_FILE_BYTES + 1)
    except OSError as exc:
        raise ScenarioError("", f"cannot read scenario file '{path}': {exc.strerror}") from None
    return decode(data, str(path))


def decode(data: bytes, source: str) -> str:
    """Bytes of a scenario → text: UTF-8 only (a UTF-8 byte-order mark is allowed), at most 1 MiB."""
    if len(data) > MAX_FILE_BYTES:
        raise ScenarioError("", f"{source}: larger than {MAX_FILE_BYTES >> 20} MiB; a scenario is a small YAML file")
    for bom, encoding in _BOMS.items():
        if data.startswith(bom):
            raise ScenarioError("", f"{source}: the file is {encoding} text; save it as UTF-8")
    if b"\x00" in data:
        raise ScenarioError("", f"{source}: a binary file, not YAML text")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise ScenarioError("", f"{source}: not UTF-8 text (byte 0x{data[exc.start]:02x} at offset {exc.start}); "
                                "save it as UTF-8") from None


def parse_yaml(text: str, source: str) -> Any:
    """YAML text → plain data; every problem is one line naming the key or the line."""
    if len(text.encode("utf-8", "surrogatepass")) > MAX_FILE_BYTES:
        raise ScenarioError("", f"{source}: larger than {MAX_FILE_BYTES >> 20} MiB; a scenario is a small YAML file")
    loader = yaml.SafeLoader(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        _check_tree(node, source)
        return loader.construct_document(node)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = getattr(exc, "problem", None) or "invalid YAML"
        raise ScenarioError("", f"{source}: malformed YAML{where}: {problem}") from None
    except RecursionError:
        raise ScenarioError("", f"{source}: nested more than {MAX_DEPTH} levels deep") from None
    finally:
        loader.dispose()


def _check_tree(root: yaml.Node, source: str) -> None:
    """Refuse repeated keys, deep nesting, self-reference and alias expansion beyond the limits.

    Aliases make the node graph a DAG whose expansion can be exponential in the file's
    size, so sizes and depths are counted once per node (memoised), never by expanding.
    """
    size: dict[int, int] = {}
    depth: dict[int, int] = {}
    open_nodes: set[int] = set()

    def visit(node: yaml.Node, path: str, level: int) -> None:
        key = id(node)
        if key in size:
            return
        if level > MAX_DEPTH:
            raise ScenarioError(path, f"nested more than {MAX_DEPTH} levels deep")
        if key in open_nodes:
            raise ScenarioError(path, "refers to itself through a YAML alias")
        open_nodes.add(key)
        children: list[tuple[yaml.Node, str]] = []
        if isinstance(node, yaml.MappingNode):
            seen: dict[Any, int] = {}
            for key_node, value_node in node.value:
                if key_node.tag == "tag:yaml.org,2002:merge":
                    children.append((value_node, path))
                    continue
                name = key_node.value if isinstance(key_node, yaml.ScalarNode) else "?"
                child = f"{path}.{name}" if path else str(name)
                if isinstance(key_node, yaml.ScalarNode):
                    if name in seen:
                        raise ScenarioError(child, f"repeated key (lines {seen[name] + 1} and "
                                                   f"{key_node.start_mark.line + 1}); write each key once")
                    seen[name] = key_node.start_mark.line
                children.append((key_node, child))
                children.append((value_node, child))
        elif isinstance(node, yaml.SequenceNode):
            children = [(item, f"{path}[{i}]") for i, item in enumerate(node.value)]
        elif node.tag == _INT_TAG and sum(c.isdigit() for c in node.value) > MAX_INT_DIGITS:
            raise ScenarioError(path, f"a whole number of {sum(c.isdigit() for c in node.value):,} digits is not "
                                      f"allowed: at most {MAX_INT_DIGITS}")
        for child, child_path in children:
            visit(child, child_path, level + 1)
        size[key] = 1 + sum(size[id(c)] for c, _ in children)
        depth[key] = 1 + max((depth[id(c)] for c, _ in children), default=0)
        open_nodes.discard(key)
        if depth[key] > MAX_DEPTH:
            raise ScenarioError(path, f"nested more than {MAX_DEPTH} levels deep")
        if size[key] > MAX_EXPANDED_NODES:
            raise ScenarioError(path, f"expands to more than {MAX_EXPANDED_NODES:,} YAML values through aliases "
                                      "(or is simply too large for a scenario)")

    visit(root, "", 0)
    if size[id(root)] > MAX_EXPANDED_NODES:
        raise ScenarioError("", f"{source}: expands to more than {MAX_EXPANDED_NODES:,} YAML values")

"""The generated C++ of a program split into several translation units, compiled at once.

DaCe writes a CPU program as one file: the per-point functions of its nested
SDFGs (``inline void nested_sdfg_...``, called inside the maps, so they must
stay inlined) and one function ``__program_<name>_internal`` whose body runs
every state. g++ spends its time optimizing that body after inlining, in one
process. Here the body's state blocks (bare ``{ ... }`` blocks) are moved
into functions of their own, defined in other files, each file holding the
per-point functions its blocks call; DaCe's build compiles the files in
parallel (``compiler.build_jobs``).

A moved block sees what it saw in place: the internal function's parameters
(passed on, with their declarations) and the locals of the scopes around it
(scalars and pointers copied in and out, arrays by reference). The block's
statements are unchanged, so the same operations run in the same order;
without FMA contraction or fast-math the results are bitwise those of one
file (tested on the example model, the idiom corpus and random programs).

Only what is recognized is split: the file must consist of DaCe's includes,
its state struct, inline functions, the internal function and the exported
entry points (no thread-local scratch planes); a block is moved only without
``goto``, ``return``, ``break``, ``continue``, labels or ``case``, not when
it is the body of a pragma, ``if`` or ``else`` on the line before, and never
out of a map's loops. Anything else keeps one file. A block inside a
``#pragma omp parallel`` block takes the variables around it by reference
(the team shares them). How many files: :mod:`orchestra.toolchain.compile_jobs`
(``ORCHESTRA_COMPILE_UNITS``). The build key does not depend on it: every
split computes the same.
"""

from __future__ import annotations

import dataclasses
import re
from typing import Any, Optional

from orchestra.toolchain.compile_jobs import default_units, requested_units

_IDENTIFIER = re.compile(r"[A-Za-z_]\w*")
_FUNCTION = re.compile(r"^(?:inline |static |DACE_EXPORTED )*[\w:]+[\s*]+(\w+)\(")
_KEYWORDS = frozenset("""return goto delete new throw case default break continue using typedef namespace
    if else for while do switch struct class enum template public private protected sizeof""".split())
_DECLARATION = re.compile(
    r"^(?P<type>(?:const\s+)?(?:(?:unsigned|signed|long)\s+)*[A-Za-z_][\w:]*(?:<[^;{}()]*>)?)\s*"
    r"(?P<ptr>(?:\*\s*(?:const\s+)?(?:__restrict__\s*)?)*)(?P<name>[A-Za-z_]\w*)\s*(?P<dims>(?:\[[^\]]*\])*)\s*"
    r"(?:=[^;]*)?;$"
)
_FOR_DECLARATION = re.compile(r"^for\s*\(\s*(?:const\s+)?[A-Za-z_][\w:<>]*[\s*]+\w+\s*=")
_ARITHMETIC = re.compile(r"^(?:(?:unsigned|signed|long|short)\s+)*(?:bool|char|short|int|long|float|double|size_t|"
                         r"u?int(?:8|16|32|64)_t|dace::(?:u?int(?:8|16|32|64)|float(?:32|64)|bool_?))$")
_UNMOVABLE = re.compile(r"\b(?:goto|return|break|continue|case)\b|^\s*[A-Za-z_]\w*\s*:(?!:)", re.MULTILINE)


@dataclasses.dataclass
class _Block:
    """A bare block of the internal function: its lines, the locals around it, its compile cost."""

    first: int
    last: int
    locals: list[tuple[str, str]]  # (name, declaration) of the enclosing scopes, innermost last
    cost: int = 0
    parallel: bool = False  # inside an OpenMP parallel construct: locals by reference (threads share them)
    unit: int = 0


def split_code_objects(code_objects: list, program: str) -> list:
    """DaCe's code objects with the program's CPU file split into several (a new list; the given one unchanged)."""
    frames = [obj for obj in code_objects if obj.language == "cpp" and obj.target.target_name == "cpu"
              and obj.title == "Frame"]
    if len(frames) != 1:
        return code_objects
    frame = frames[0]
    asked = requested_units()
    code = frame.clean_code  # without DaCe's source-map markers (orchestra writes no source map)
    units = asked if asked is not None else default_units(code.count("\n"))
    split = split_code(code, program, units) if units > 1 else None
    if split is None:
        return code_objects
    from dace.codegen.codeobject import CodeObject

    def like_frame(name: str, text: str, title: str) -> Any:
        return CodeObject(name, text, "cpp", frame.target, title, target_type=frame.target_type,
                          additional_compiler_kwargs=dict(frame.extra_compiler_kwargs), linkable=frame.linkable,
                          environments=set(frame.environments))

    main, parts = split
    return [like_frame(frame.name, main, frame.title) if obj is frame else obj for obj in code_objects] + [
        like_frame(f"{frame.name}_part{index}", text, "Frame part") for index, text in enumerate(parts, start=1)]


def split_code(code: str, program: str, units: int) -> Optional[tuple[str, list[str]]]:
    """The main file's new text and the other files' texts, or None when the code is not split."""
    lines = code.split("\n")
    depths = _line_depths(code)
    if depths is None:
        return None
    functions = _functions(lines, depths)
    if functions is None:
        return None
    internal = f"__program_{program}_internal"
    if internal not in functions:
        return None
    first, last = functions[internal]
    opening = next(index for index in range(first, last + 1) if depths[index + 1] > 0)
    header = " ".join(line.strip() for line in lines[first:opening + 1]).split("{", 1)[0]
    parameters = _parameter_names(header)
    if parameters is None:
        return None
    if any(line.lstrip().startswith("#") and not line.lstrip().startswith("#pragma")
           for line in lines[first:last + 1]):
        return None  # a block moved out of an #if would change what is compiled
    costs = _function_costs(lines, functions)
    total = _cost("\n".join(lines[first + 1:last + 1]), costs)  # the body: the header names the function itself
    blocks = _blocks(lines, depths, opening, last, [], False, costs, total // (2 * units))
    if not blocks:
        return None
    if not _assign(blocks, units, total):
        return None
    return _render(lines, functions, internal, header, parameters, blocks, program)


def _line_depths(code: str) -> Optional[list[int]]:
    """The brace depth at the start of every line, braces in comments, strings and characters aside."""
    depths, depth, index, size = [0], 0, 0, len(code)
    while index < size:
        char = code[index]
        if char == "\n":
            depths.append(depth)
        elif char == "{":
            depth += 1
        elif char == "}":
            depth -= 1
            if depth < 0:
                return None
        elif char == "/" and code.startswith("//", index):
            end = code.find("\n", index)
            index = size if end < 0 else end
            continue
        elif char == "/" and code.startswith("/*", index):
            end = code.find("*/", index + 2)
            if end < 0:
                return None
            depths.extend([depth] * code.count("\n", index, end))
            index = end + 2
            continue
        elif char in "\"'":
            end = index + 1
            while end < size and code[end] != char:
                end += 2 if code[end] == "\\" else 1
                if end < size and code[end] == "\n":
                    return None
            index = end + 1
            continue
        index += 1
    return depths if depth == 0 else None


def _functions(lines: list[str], depths: list[int]) -> Optional[dict[str, tuple[int, int]]]:
    """Every function defined at file scope: name -> (first line, closing line); None for anything unexpected there.

    DaCe's thread-local pointers (``#pragma omp threadprivate``: fused programs' scratch planes) are refused
    too: shared between files as ``extern``, every function looked them up again (the dycore: 1,129 calls of
    ``__tls_get_addr`` against 219, and a step 4.7x slower).
    """
    functions: dict[str, tuple[int, int]] = {}
    index, count = 0, len(lines)
    while index < count:
        line = lines[index].strip()
        if depths[index] != 0 or not line or line.startswith(("#", "//", "/*", "*")):
            index += 1
            continue
        struct = line.startswith("struct ") and line.endswith("{")
        match = None if struct else _FUNCTION.match(line)
        if not struct and (match is None or line.endswith(";") or match.group(1).startswith("__attribute")):
            return None  # a variable, a declaration, a typedef at file scope: not split
        body = index + 1
        while body < count and depths[body] == 0:
            body += 1
        closing = body
        while closing + 1 < count and depths[closing + 1] > 0:
            closing += 1
        if body >= count or closing + 1 >= count:
            return None
        if match is not None:
            functions[match.group(1)] = (index, closing)
        index = closing + 1
    return functions


def _parameter_names(header: str) -> Optional[list[str]]:
    """The names of a function's parameters, from its header (function pointers included)."""
    names = []
    for declaration in _parameter_declarations(header):
        pointer = re.search(r"\(\s*\*\s*(\w+)\s*\)", declaration)
        found = pointer.group(1) if pointer else (_IDENTIFIER.findall(declaration) or [None])[-1]
        if found is None:
            return None
        names.append(found)
    return names


def _blocks(lines: list[str], depths: list[int], opening: int, closing: int, outer: list[tuple[str, str]],
            parallel: bool, costs: dict[str, int], limit: int) -> list[_Block]:
    """The outermost movable bare blocks between lines ``opening`` and ``closing`` (a scope's braces), with the
    locals declared around each; a block costlier than ``limit`` is replaced by the movable blocks inside it
    when those hold at least half its cost. ``outer``: the locals declared around the scope; ``parallel``:
    whether it runs inside an OpenMP parallel construct."""
    blocks: list[_Block] = []
    base = depths[opening] + 1
    scopes: list[list[tuple[str, str]]] = [list(outer)]  # declarations per open scope
    unsafe, in_parallel = [False], [parallel]
    index = opening + 1
    while index < closing:
        line = lines[index].strip()
        level = depths[index] - base + 1
        del scopes[level:], unsafe[level:], in_parallel[level:]
        if line.startswith("}"):
            del scopes[level - 1:], unsafe[level - 1:], in_parallel[level - 1:]
            line = line[1:].strip()
        if line == "{" and not any(unsafe) and _statement_starts(lines, index):
            end = _closing(depths, index)
            if not _UNMOVABLE.search("\n".join(lines[index:end + 1])):
                around = [entry for scope in scopes for entry in scope]
                block = _Block(index, end, around, _cost("\n".join(lines[index:end + 1]), costs), in_parallel[-1])
                inner = _blocks(lines, depths, index, end, around, in_parallel[-1], costs, limit) \
                    if block.cost > limit else []
                blocks.extend(inner if 2 * sum(b.cost for b in inner) >= block.cost else [block])
                index = end + 1
                continue
        declared = _DECLARATION.match(line)
        if declared and declared.group("type").split()[-1] not in _KEYWORDS and declared.group("name") not in _KEYWORDS:
            scopes[-1].append((declared.group("name"), line))
        if line.endswith("{"):
            _open_scope(lines, index, line, scopes, unsafe, in_parallel)
        index += 1
    return blocks


def _open_scope(lines: list[str], index: int, line: str, scopes: list, unsafe: list, in_parallel: list) -> None:
    """Enter the scope a line opens: whether blocks may move from it (not from a map's loops: measured on the
    dycore, blocks moved out of its OpenMP-parallel vertical loop made a step 3.4x slower), whether it is
    OpenMP-parallel (a ``#pragma omp parallel`` block)."""
    previous = next((lines[at].strip() for at in range(index - 1, -1, -1) if lines[at].strip()), "")
    scopes.append([])
    unsafe.append(bool(re.search(r"\bauto\b", line) or _FOR_DECLARATION.match(line)))
    in_parallel.append(in_parallel[-1] or previous.startswith("#pragma omp parallel"))


def _statement_starts(lines: list[str], index: int) -> bool:
    """Whether the block opening on line ``index`` is a statement of its own: not the body of a pragma
    (``#pragma omp parallel``), an ``if``, ``else``, ``for`` or ``do`` written on the line before."""
    for at in range(index - 1, -1, -1):  # not a reversed slice: a copy of the file's lines per block
        text = lines[at].split("//", 1)[0].strip()
        if text:
            return text.endswith((";", "{", "}"))
    return False


def _closing(depths: list[int], opening: int) -> int:
    """The line closing the block opened (alone) on line ``opening``."""
    index = opening + 1
    while depths[index + 1] > depths[opening]:
        index += 1
    return index


def _function_costs(lines: list[str], functions: dict[str, tuple[int, int]]) -> dict[str, int]:
    """Lines g++ compiles for one call of each inline function: its own and, inlined, its callees'."""
    own = {name: "\n".join(lines[first:last + 1]) for name, (first, last) in functions.items()}
    costs: dict[str, int] = {}

    def cost(name: str, seen: frozenset) -> int:
        if name not in costs:
            calls = [callee for callee in _IDENTIFIER.findall(own[name]) if callee in own and callee != name]
            first, last = functions[name]
            costs[name] = (last - first + 1) + sum(cost(callee, seen | {name}) for callee in calls if callee not in seen)
        return costs[name]

    for name in functions:
        cost(name, frozenset())
    return costs


def _cost(text: str, costs: dict[str, int]) -> int:
    return text.count("\n") + 1 + sum(costs.get(word, 0) for word in _IDENTIFIER.findall(text))


def _assign(blocks: list[_Block], units: int, total: int) -> bool:
    """Blocks to files in program order, a file's share of the cost each (file 0 keeps its blocks in place); any moved?

    Contiguous, so that an edit which changes one block's cost moves at most the
    cuts next to it: the other files stay the same (objects reused, D58).
    """
    target, load, unit = total / units, total - sum(block.cost for block in blocks), 0
    for block in blocks:
        if unit < units - 1 and load + block.cost / 2 > target * (unit + 1):
            unit += 1
        block.unit = unit
        load += block.cost
    return any(block.unit for block in blocks)


def _render(lines: list[str], functions: dict[str, tuple[int, int]], internal: str, header: str,
            parameters: list[str], blocks: list[_Block], program: str) -> tuple[str, list[str]]:
    """The main file (moved blocks replaced by calls) and one file per unit of moved blocks."""
    in_function = set()
    for first, last in functions.values():
        in_function.update(range(first, last + 1))
    internal_first = functions[internal][0]
    preamble = [line for index, line in enumerate(lines[:internal_first]) if index not in in_function]
    declarations = _parameter_declarations(header)
    units: dict[int, list[str]] = {}
    replaced: dict[int, tuple[int, str]] = {}
    prototypes = []
    for number, block in enumerate(sorted((b for b in blocks if b.unit), key=lambda b: b.first)):
        name = f"__orchestra_{program}_block_{number}"
        body = lines[block.first:block.last + 1]
        used = set(_IDENTIFIER.findall("\n".join(body)))
        passed = [(p, d) for p, d in zip(parameters, declarations) if p in used]
        kept = {name_: line for name_, line in block.locals if name_ in used}  # the innermost declaration wins
        signature, arguments, copy_in, copy_out = [d for _, d in passed], [p for p, _ in passed], [], []
        for local, line in kept.items():
            parts = _DECLARATION.match(line)
            type_, pointer, dims = parts.group("type"), parts.group("ptr").strip(), parts.group("dims")
            if dims:
                signature.append(f"{type_} {pointer}(&{local}){dims}")
            elif block.parallel or type_.startswith("const ") or not (pointer or _ARITHMETIC.match(type_)):
                # by reference: a variable the team's threads share, a constant, an object
                signature.append(f"{type_} {pointer}&{local}")
            else:
                signature.append(f"{type_} {pointer}&{local}__outer")
                copy_in.append(f"    {type_} {pointer}{local} = {local}__outer;")
                copy_out.append(f"    {local}__outer = {local};")
            arguments.append(local)
        prototype = f'__attribute__((visibility("hidden"))) void {name}({", ".join(signature)})'
        prototypes.append(prototype + ";")
        units.setdefault(block.unit, []).append("\n".join([prototype, "{", *copy_in, *body, *copy_out, "}"]))
        indent = re.match(r"\s*", lines[block.first]).group(0)
        replaced[block.first] = (block.last, f"{indent}{name}({', '.join(arguments)});")
    main = _main_file(lines, functions, internal_first, replaced, prototypes)
    parts = [_unit_file(preamble, text, lines, functions) for _, text in sorted(units.items())]
    return main, parts


def _parameter_declarations(header: str) -> list[str]:
    """A function header's parameter declarations, as written."""
    inside = header[header.index("(") + 1:header.rindex(")")]
    declarations, depth, current = [], 0, ""
    for char in inside + ",":
        if char == "," and depth == 0:
            declarations.append(current.strip())
            current = ""
            continue
        depth += (char == "(") - (char == ")")
        current += char
    return declarations


def _needed(text: str, functions: dict[str, tuple[int, int]], lines: list[str]) -> set[str]:
    """The file-scope functions ``text`` calls, directly or through others."""
    needed: set[str] = set()
    work = [word for word in set(_IDENTIFIER.findall(text)) if word in functions]
    while work:
        name = work.pop()
        if name in needed:
            continue
        needed.add(name)
        first, last = functions[name]
        work.extend(word for word in set(_IDENTIFIER.findall("\n".join(lines[first:last + 1])))
                    if word in functions and word not in needed)
    return needed


def _unit_file(preamble: list[str], blocks: list[str], lines: list[str],
               functions: dict[str, tuple[int, int]]) -> str:
    """One unit: DaCe's includes and state struct, the inline functions its blocks call, in order, and the blocks."""
    text = "\n\n".join(blocks)
    needed = _needed(text, functions, lines)
    callees = [functions[name] for name in sorted(needed, key=lambda name: functions[name][0])]
    return "\n".join([*preamble, *("\n".join(lines[first:last + 1]) for first, last in callees), text, ""])


def _main_file(lines: list[str], functions: dict[str, tuple[int, int]], internal_first: int,
               replaced: dict[int, tuple[int, str]], prototypes: list[str]) -> str:
    """The main file: moved blocks replaced by calls, their prototypes before the internal function, and of the
    inline functions only those the rest still calls."""
    inline = {first: (name, last) for name, (first, last) in functions.items() if lines[first].startswith("inline ")}
    pieces: list[tuple[Optional[str], list[str]]] = []  # (inline function or None, its lines)
    index = 0
    while index < len(lines):
        if index in inline:
            name, last = inline[index]
            pieces.append((name, lines[index:last + 1]))
            index = last + 1
        elif index in replaced:
            last, call = replaced[index]
            pieces.append((None, [call]))
            index = last + 1
        else:
            pieces.append((None, [*(prototypes if index == internal_first else []), lines[index]]))
            index += 1
    calls = {name: functions[name] for name, _ in inline.values()}  # others are in the text as they now are
    needed = _needed("\n".join(line for name, text in pieces if name is None for line in text), calls, lines)
    return "\n".join(line for name, text in pieces if name is None or name in needed for line in text)

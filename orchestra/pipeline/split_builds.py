"""Which orchestrated calls of a split build run their Python body.

A split build (docs/orchestration.md, "Split builds") runs some orchestrated
calls as their Python body, as ``Python`` mode does, so that the orchestrated
components they call are built and run as programs of their own, and an edit
rebuilds only the program holding it. Two settings choose those calls:

* ``DaceConfig.split_depth = N``: every call less than N orchestrated calls
  deep (the same cut everywhere in the call tree);
* ``DaceConfig.split_at = ("Hyperdiffusion", ...)``: every call whose object
  holds, at any depth of its attributes, an orchestrated object of a named
  class. The named components become programs of their own; the calls on the
  way to them run as Python; everything else stays as large as before (a
  sibling of a named component is one program with all it calls).

:func:`named_component_below` finds the held component for ``split_at``: it
walks the object's attributes (and lists, tuples and dict values of them)
through orchestrated objects only, so it follows the model's component tree,
not arbitrary data.

``split_at = ("edited",)`` derives the names from the cache: when the whole
program has no build, :func:`edited_classes` compares the key's inputs with
those of each earlier build of the program and names the classes of the
orchestrated components every difference lies inside (None when a
difference lies outside all of them); :func:`agreed_edited_split` takes the
earlier build that differs inside the fewest classes, or builds the whole
program as usual when none does. Without ``split_at``, :func:`edit_hint`
tells a developer whose whole program was rebuilt for such an edit that
``edited`` would rebuild less.
"""

from __future__ import annotations

import contextvars
import hashlib
import logging
from typing import TYPE_CHECKING, Any, Callable, Iterator, Mapping, Optional

import numpy as np

from orchestra.config import ensure_log_handler
from orchestra.key.call_tree import PROGRAMS_ATTRIBUTE, orchestrated_methods
from orchestra.pipeline.restore_on_miss import restoring_on_miss
from orchestra.stencils.python_body import reset_body_config, set_body_config

if TYPE_CHECKING:
    from orchestra.cache.store import BuildStore
    from orchestra.config import DaceConfig
    from orchestra.distributed.coordinator import BuildCoordinator
    from orchestra.pipeline.request import KeyedRequest

#: The ``split_at`` word for "the components the edit is in" (docs/orchestration.md, "Rebuild only what you edited").
EDITED = "edited"

log = logging.getLogger("orchestra")

#: How many orchestrated calls around this one run their Python body (split builds, DaceConfig.split_depth).
_SPLIT_DEPTH: contextvars.ContextVar[int] = contextvars.ContextVar("orchestra_split_depth", default=0)
#: The classes an enclosing program's edited split (``split_at=("edited",)``) builds on their own; None: none.
_EDITED_SPLIT: contextvars.ContextVar[Optional[tuple[str, ...]]] = contextvars.ContextVar(
    "orchestra_edited_split", default=None
)
#: The objects whose Python bodies run around this call in a split build, outermost first.
_RUNNING_BODIES: contextvars.ContextVar[tuple[Any, ...]] = contextvars.ContextVar("orchestra_running_bodies", default=())
#: Programs whose split-build line was logged (one line per program name, not per object or call).
_SPLIT_LOGGED: set[str] = set()


def split_depth() -> int:
    """How many orchestrated calls around the current one run their Python body (0: none; a whole build)."""
    return _SPLIT_DEPTH.get()


class SplitRole:
    """One orchestrated program's part in a split build: whether its call runs its Python body, and running it.

    The state of the split is here, the calls in :mod:`orchestra.orchestrate`
    only ask: :meth:`runs_body` (this call is on the way to a split component,
    or less than ``split_depth`` deep), :meth:`run_body` and :meth:`run_edited`
    (the Python body, its orchestrated callees one level deeper), and, for
    ``split_at=("edited",)``, :meth:`decide_edited` on the first call.
    """

    def __init__(self, label: str, config: "DaceConfig", method_object: Any) -> None:
        self.label, self.config, self.method_object = label, config, method_object
        #: split_at: the names last looked up, and where the object holds one of them (None: nowhere)
        self._held: Optional[tuple[tuple[str, ...], Optional[str]]] = None
        #: split_at edited: the classes this program's calls split at (None: not decided yet; empty: no split)
        self.edited: Optional[tuple[str, ...]] = None
        self._ran = False  #: the body ran once (a Run job's first call restores its arrays on a miss)
        self._roots: tuple = ()

    def runs_body(self, depth: int) -> bool:
        """This call runs its Python body: less than ``split_depth`` deep, or holding a component split at."""
        return depth < self.config.split_depth or self.path() is not None

    def names(self) -> tuple[str, ...]:
        """The classes split at: those ``split_at`` names, and those an enclosing edited split chose."""
        edited = _EDITED_SPLIT.get()
        if not self.config.split_at and edited is None:  # every call asks: the common case stays cheap
            return ()
        return tuple(name for name in self.config.split_at if name != EDITED) + (edited or ())

    def path(self) -> Optional[str]:
        """Where this call's object holds a component of a class split at (None: nowhere, or no names)."""
        names = self.names()
        if not names:
            return None
        if self._held is None or self._held[0] != names:  # the component tree is set up by now
            self._held = (names, named_component_below(self.method_object, names, _RUNNING_BODIES.get()))
        return self._held[1]

    def decides_edited(self) -> bool:
        """``split_at=("edited",)`` and this is the outermost orchestrated call, not decided yet."""
        return self.edited is None and EDITED in self.config.split_at and _EDITED_SPLIT.get() is None

    def decide_edited(self, keyed: "KeyedRequest", store: "BuildStore", coordinator: "BuildCoordinator") -> bool:
        """Choose the edited split (collectively) and say so; True when the call must run it."""
        self.edited, reason = agreed_edited_split(keyed, store, coordinator, self.method_object)
        if self.config.rank == 0 and self.edited:
            log.info("%s: split build (split_at %s) at %s: no build of its key, and %s; the calls on the way to "
                     "them run their Python body, each orchestrated component they call is a program of its own",
                     self.label, EDITED, ",".join(self.edited), reason)
        elif self.config.rank == 0:
            log.info("%s: split_at %s: one program, as %s", self.label, EDITED, reason)
        return bool(self.edited)

    def roots(self, args: tuple, kwargs: dict) -> "SplitRole":
        """Note what this call can write (its arguments and the model object), for :meth:`run_body`."""
        self._roots = (*args, *kwargs.values(), self.method_object)
        return self

    def run_body(self, depth: int, body: Callable[[], Any], orchestrate: Callable) -> Any:
        """A split build's outer call: ``body`` (the method's Python body), as in ``Python`` mode.

        The orchestrated components it calls see one more level of depth; at
        ``split_depth`` they are built and run as programs of their own; its
        stencils run as one-stencil programs (made with ``orchestrate``).
        """
        self._log_once(depth)
        if depth == 0 and not self._ran and self.config.orchestration.value == "Run":
            self._ran = True
            return restoring_on_miss(self._roots, lambda: self.run_body(depth, body, orchestrate))
        self._ran = True
        token, config = _SPLIT_DEPTH.set(depth + 1), set_body_config(self.config, orchestrate)
        running = _RUNNING_BODIES.set(_RUNNING_BODIES.get() + (self.method_object,))
        try:
            return body()
        finally:
            _RUNNING_BODIES.reset(running)
            reset_body_config(config)
            _SPLIT_DEPTH.reset(token)

    def run_edited(self, depth: int, body: Callable[[], Any], orchestrate: Callable) -> Any:
        """``split_at=("edited",)`` after an edit: the Python body, the edited components' classes split at below."""
        token = _EDITED_SPLIT.set(self.edited)
        try:
            return self.run_body(depth, body, orchestrate)
        finally:
            _EDITED_SPLIT.reset(token)

    def _log_once(self, depth: int) -> None:
        if self.label in _SPLIT_LOGGED or self.edited:  # once per program name, on one rank
            return
        _SPLIT_LOGGED.add(self.label)
        ensure_log_handler(self.config.rank)
        if self.config.rank != 0:
            return
        if depth < self.config.split_depth:
            log.info("%s: split build (split_depth %d): runs its Python body at depth %d; the orchestrated "
                     "components it calls at depth %d are each built on their own", self.label,
                     self.config.split_depth, depth, depth + 1)
        else:
            log.info("%s: split build (split_at %s): runs its Python body, as it holds %s; the orchestrated "
                     "components it calls are each built on their own", self.label, ",".join(self.names()),
                     self.path())


#: Parts of a key that describe the call tree node by node; a difference anywhere else concerns the whole program.
_PER_NODE_INPUTS = frozenset({"call_tree", "source"})


def _orchestrated(value: Any) -> bool:
    return PROGRAMS_ATTRIBUTE in getattr(value, "__dict__", {})


def named_component_below(obj: Any, names: tuple[str, ...], above: tuple[Any, ...] = ()) -> Optional[str]:
    """The attribute path to an orchestrated object below ``obj`` whose class is in ``names`` (None: none).

    E.g. ``"stages[0].tendencies.hyperdiffusion"``; ``obj`` itself does not
    count. The walk does not enter the objects ``above`` (those whose Python
    bodies are running around this call): a component holding its parent
    (``self.owner = owner``) would otherwise reach its siblings through it.
    Missing a component is never wrong, only less split: a call not split
    is one program holding what it calls.
    """
    if not names or obj is None:
        return None
    return next((where for where, item in _components_below(obj, above) if type(item).__name__ in names), None)


def _components_below(obj: Any, above: tuple[Any, ...] = ()) -> Iterator[tuple[str, Any]]:
    """Breadth first (the shortest path first): each orchestrated object below ``obj``, once, with its path."""
    seen = {id(obj), *(id(item) for item in above)}
    frontier: list[tuple[Any, str]] = [(obj, "")]
    while frontier:
        current, path = frontier.pop(0)
        for name, attribute in getattr(current, "__dict__", {}).items():
            for index, item in _items(attribute):
                if not _orchestrated(item) or id(item) in seen:
                    continue
                seen.add(id(item))
                where = f"{path}.{name}{index}" if path else f"{name}{index}"
                yield where, item
                frontier.append((item, where))


def _items(attribute: Any) -> Iterator[tuple[str, Any]]:
    if isinstance(attribute, (list, tuple)):
        yield from ((f"[{index}]", item) for index, item in enumerate(attribute))
    elif isinstance(attribute, dict):
        yield from ((f"[{key!r}]", item) for key, item in attribute.items())
    else:
        yield "", attribute


def orchestrated_classes(obj: Any) -> dict[str, set[str]]:
    """Below ``obj`` (not ``obj`` itself): each orchestrated function's name -> the classes of the objects running it.

    Names as the key writes them (``module.Qualname``); a method inherited by
    several orchestrated classes lists them all.
    """
    from orchestra.key.call_tree import function_name

    classes: dict[str, set[str]] = {}
    for _where, item in _components_below(obj):
        for program in orchestrated_methods(item).values():
            classes.setdefault(function_name(program.function), set()).add(type(item).__name__)
    return classes


def edited_classes(
    current: Mapping[str, Any], earlier: Mapping[str, Any], classes: Mapping[str, set[str]]
) -> Optional[frozenset[str]]:
    """The classes of the orchestrated components that hold every difference between two builds' key inputs.

    ``current`` and ``earlier`` are the inputs of two keys of one program
    (canonical form, as a manifest stores them); ``classes`` is
    :func:`orchestrated_classes` of the program's object. A changed node of
    the call tree belongs to its deepest orchestrated component (itself, if
    it is one); a changed source belongs to the components of the nodes that
    run it. None if any difference belongs to no component below the
    program: its own body, arguments, closure arrays, toolchain, a function
    reached only through globals; the whole program must be rebuilt then.
    """
    from orchestra.cache.fingerprint import canonical

    current, earlier = canonical(dict(current)), canonical(dict(earlier))
    if any(current.get(part) != earlier.get(part) for part in (set(current) | set(earlier)) - _PER_NODE_INPUTS):
        return None
    trees = [current.get("call_tree", {}), earlier.get("call_tree", {})]
    changed_nodes = [path for path in set(trees[0]) | set(trees[1]) if trees[0].get(path) != trees[1].get(path)]
    sources = [current.get("source", {}), earlier.get("source", {})]
    for function in set(sources[0]) | set(sources[1]):
        if sources[0].get(function) != sources[1].get(function):
            running = [path for tree in trees for path, node in tree.items() if _runs(node, function)]
            if not running:
                return None  # reached through globals only, or the program's own function
            changed_nodes.extend(running)
    found: set[str] = set()
    for path in changed_nodes:
        owner = _owning_classes(path, trees, classes)
        if owner is None:
            return None
        found |= owner
    return frozenset(found)


def _runs(node: Mapping[str, Any], function: str) -> bool:
    """Whether a call-tree node runs ``function``: as its own, through a global name, or as a stencil's definition.

    A function a node's body reaches through a global name (``twice(self.a)``,
    which DaCe may evaluate without parsing it) is listed under the node's
    ``reaches``. A function DaCe parsed without a node of its own (a static
    method of constants, say) is one of the node's callees. A stencil's
    definition is keyed by source when a function names it
    (``self.flux(...)`` names the module's ``flux`` too, as the key reads
    names conservatively); an edit of it belongs to the components that call
    the stencil.
    """
    return (
        node.get("function") == function
        or function in node.get("reaches", ())
        or any(function in (callee.get("stencil"), callee.get("function"))
               for callee in node.get("callees", {}).values())
    )


def _owning_classes(path: str, trees: list[Mapping[str, Any]], classes: Mapping[str, set[str]]) -> Optional[set[str]]:
    """The classes of the deepest orchestrated component on ``path`` (the node itself included); None if none."""
    segments = path.split("/")
    for end in range(len(segments), 0, -1):
        prefix = "/".join(segments[:end])
        for tree in trees:
            node = tree.get(prefix)
            if node is not None and node.get("function") in classes:
                return set(classes[node["function"]])
    return None


def _narrowest_split(keyed: "KeyedRequest", closest: list, classes: Mapping[str, set[str]]) -> Optional[tuple]:
    """``(classes, entry)`` of the earlier build (of ``closest``) that differs inside the fewest classes.

    Only builds that differ from ``keyed`` inside components count; the
    closest comes first among equals. None when there is none.
    """
    splits = [(names, entry) for entry, _ in closest
              if (names := edited_classes(keyed.inputs, entry.manifest.inputs, classes)) is not None]
    return min(splits, key=lambda split: len(split[0])) if splits else None


def agreed_edited_split(
    keyed: "KeyedRequest", store: "BuildStore", coordinator: "BuildCoordinator", obj: Any
) -> tuple[tuple[str, ...], str]:
    """Collectively: the classes to split ``obj``'s program at for ``split_at=("edited",)``, and why.

    Empty when every rank finds a build of its key, when a rank's key has no
    earlier build to compare with, or when a rank's key differs from every
    earlier build outside the components (the whole program is built then).
    Among the earlier builds that differ only inside components, the one
    that differs inside the fewest classes counts (an older build of another
    orchestra version may be closer by the number of differences, but not
    splittable). Otherwise the
    union over the ranks' edited classes: every rank must run the same
    programs. Two reductions of a fixed size, whatever the number of ranks.
    """
    classes = orchestrated_classes(obj)
    candidates = sorted({name for names in classes.values() for name in names})

    def local() -> tuple[Optional[frozenset[str]], str]:
        if store.lookup(keyed.key, keyed.label).entry is not None:
            return frozenset(), "its build was found"
        try:
            closest = store.closest(keyed.label, keyed.inputs, other_than=keyed.key)
            if not closest:
                return None, "there is no earlier build of it to compare with"
            split = _narrowest_split(keyed, closest, classes)
        except Exception as error:  # an unreadable earlier build must not stop this one: build it whole
            return None, f"its earlier builds could not be compared ({type(error).__name__}: {error})"
        if split is None:
            return None, (f"it differs from every earlier build outside its components (the closest: "
                          f"{closest[0][0].key[:12]})")
        names, entry = split
        return names, f"the earlier build {entry.key[:12]} differs only inside them"

    names, reason = coordinator.collectively(local, f"comparing {keyed.label} with its earlier builds")
    digest = int.from_bytes(hashlib.sha256("\n".join(candidates).encode()).digest()[:6], "big")
    same = coordinator.wire.allreduce_min(np.array([digest, -digest], dtype=np.int64), "edited split: components")
    if same[0] != -same[1]:
        return (), "the ranks' models hold different components"
    # per candidate: 0 if this rank's edit is in it; the last entry 0 if this rank needs the whole program
    marks = np.ones(len(candidates) + 1, dtype=np.int64)
    if names is None:
        marks[-1] = 0
    else:
        marks[[candidates.index(name) for name in names if name in candidates]] = 0
    marks = coordinator.wire.allreduce_min(marks, "edited split: classes")
    if marks[-1] == 0:
        return (), reason if names is None else "another rank's key differs outside the components"
    agreed = tuple(name for name, mark in zip(candidates, marks[:-1]) if mark == 0)
    if agreed and not names:
        reason = "another rank's key differs from its earlier build only inside them"
    return agreed, reason


def edit_hint(keyed: "KeyedRequest", store: "BuildStore", obj: Any) -> Optional[str]:
    """After a whole rebuild of ``obj``'s outermost program: the hint to split at the edit, if it would help.

    Some text when an earlier build of the program differs from this one
    only inside orchestrated components below it (what ``split_at=("edited",)``
    would have rebuilt alone from the next edit there on), naming the
    components as the edited split would; None otherwise, or when the
    earlier builds cannot be read.
    """
    try:
        split = _narrowest_split(keyed, store.closest(keyed.label, keyed.inputs, other_than=keyed.key),
                                 orchestrated_classes(obj))
    except Exception:  # a hint must never fail a call
        return None
    if split is None or not split[0]:
        return None
    names, entry = split
    listed = ", ".join(sorted(names))
    return (f"the whole program was rebuilt for a change inside {listed} (against the earlier build "
            f"{entry.key[:12]}); with ORCHESTRA_SPLIT_AT={EDITED} (DaceConfig(split_at=('{EDITED}',))) "
            f"such an edit rebuilds {listed} alone, from its second edit on (docs/orchestration.md, "
            f"'Rebuild only what you edited')")

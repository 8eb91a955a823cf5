"""The pass on the test model's SDFG, without compiling: kernels, fields, patterns, no-op."""

from __future__ import annotations

import json
import os

import pytest

from orchestra.passes.debug import DebugChecks, insert_debug_checks
from orchestra.passes.debug.kernels import find_kernels
from orchestra.toolchain import dace_settings
from tests.debug.conftest import optimized
from tests.debug.programs import N_STEPS, STENCIL_ORDER, WRITES


def _code(sdfg) -> str:
    with dace_settings():
        return "\n".join(obj.clean_code for obj in sdfg.generate_code())


def test_no_checks_leaves_the_sdfg_and_code_untouched(sdfg):
    before_json = json.dumps(sdfg.to_json(), sort_keys=True)
    before_hash = sdfg.hash_sdfg()
    before_code = _code(sdfg)
    assert insert_debug_checks(sdfg, DebugChecks()) is None
    assert insert_debug_checks(sdfg, DebugChecks.parse("")) is None
    assert json.dumps(sdfg.to_json(), sort_keys=True) == before_json
    assert sdfg.hash_sdfg() == before_hash
    code = _code(sdfg)
    assert code == before_code and "orchestra_debug" not in code


def test_kernels_are_the_stencil_calls_in_program_order(sdfg):
    kernels = find_kernels(sdfg)
    assert [k.stencil for k in kernels] == list(STENCIL_ORDER)  # the loop body, once
    assert [k.index for k in kernels] == [1, 2, 3]
    for kernel in kernels:
        assert [field.name for field in kernel.fields] == [WRITES[kernel.stencil]]
        assert kernel.label.startswith(kernel.stencil + "__")
        # the written region is the compute domain of the stencil
        assert str(kernel.fields[0].subset) == "1:7, 1:6, 0:3"
    # each kernel ends its own state
    assert len({id(k.state) for k in kernels}) == 3


def test_a_build_with_checks_leaves_fusion_out_unless_its_passes_are_named():
    from orchestra.passes.cpu import DEFAULT_CPU_PASSES, UNFUSED_CPU_PASSES
    from orchestra.pipeline.stages import OptimizeOptions

    assert "merge_vertical_maps" in OptimizeOptions().cpu_passes
    assert OptimizeOptions(debug_checks=DebugChecks.parse("nan")).cpu_passes == UNFUSED_CPU_PASSES
    named = OptimizeOptions(debug_checks=DebugChecks.parse("nan"), cpu_passes=DEFAULT_CPU_PASSES)
    assert named.cpu_passes == DEFAULT_CPU_PASSES and named.as_key() != OptimizeOptions(
        debug_checks=DebugChecks.parse("nan")).as_key()


def test_a_fused_kernel_is_named_by_every_stencil_it_runs(parsed_sdfg, tmp_path):
    fused = optimized(parsed_sdfg)  # the default passes: the three stencils merge into one map over k
    kernels = insert_debug_checks(fused, DebugChecks.parse("nan"))
    fused.validate()
    (kernel,) = kernels
    assert kernel.stencil == "+".join(STENCIL_ORDER)
    assert sorted(field.name for field in kernel.fields) == sorted(WRITES.values())
    assert kernel.describe().endswith(f"(fused stencils {'+'.join(STENCIL_ORDER)})")
    fused.build_folder = str(tmp_path / "build")
    assert f"after k1 {kernel.label} (fused stencils" in _code(fused)


def test_check_states_follow_each_kernel(sdfg):
    kernels = insert_debug_checks(sdfg, DebugChecks.parse("nan;progress"))
    sdfg.validate()
    for kernel in kernels:
        (edge,) = kernel.state.parent_graph.out_edges(kernel.state)
        check_state = edge.dst
        assert check_state.label == f"orchestra_debug_k{kernel.index}"
        (tasklet,) = [n for n in check_state.nodes() if hasattr(n, "side_effects") and n.side_effects]
        assert f"after k{kernel.index} {kernel.label} (stencil {kernel.stencil})" in tasklet.code.as_string
    assert "ORCHESTRA_DEBUG_RUNTIME" in sdfg.global_code["frame"].as_string


def _checked_fields(sdfg, spec):
    insert_debug_checks(sdfg, DebugChecks.parse(spec))
    code = _code(sdfg)
    found = {}
    for kind in ("check_finite", "check_below", "trace"):
        found[kind] = sorted({line.split('"')[1] for line in code.splitlines() if f"orchestra_debug::{kind}(kernel" in line})
    return found


@pytest.mark.parametrize(
    "spec,expected",
    [
        ("nan", {"check_finite": ["h", "out", "ratio"], "check_below": [], "trace": []}),
        ("nan:include=h,ra*", {"check_finite": ["h", "ratio"], "check_below": [], "trace": []}),
        ("nan:exclude=h", {"check_finite": ["out", "ratio"], "check_below": [], "trace": []}),
        ("negative:fields=h,out,exclude=out", {"check_finite": [], "check_below": ["h"], "trace": []}),
        ("trace:point=1,1,1,exclude=out", {"check_finite": [], "check_below": [], "trace": ["h", "ratio"]}),
        ("progress", {"check_finite": [], "check_below": [], "trace": []}),
    ],
)
def test_patterns_select_fields(sdfg, spec, expected):
    assert _checked_fields(sdfg, spec) == expected


def test_progress_only_still_follows_every_kernel(sdfg):
    kernels = insert_debug_checks(sdfg, DebugChecks.parse("progress"))
    code = _code(sdfg)
    assert code.count("orchestra_debug::progress(kernel, seq)") == len(kernels) == len(STENCIL_ORDER)
    assert N_STEPS > 1  # the loop makes each kernel run N_STEPS times (checked in test_checks)


def _two_stencil_nested_program():
    """A nested SDFG holding two stencils (maps labelled like gt4py's), writing A and B."""
    import dace

    inner = dace.SDFG("two_stencils")
    inner.add_array("x", [6, 5], dace.float64)
    inner.add_array("y", [6, 5], dace.float64)
    first = inner.add_state("first")
    _, alpha, _ = first.add_mapped_tasklet(
        "alpha", dict(i="0:6", j="0:5"), {}, "o = i + 10 * j", {"o": dace.Memlet("x[i, j]")}, external_edges=True
    )
    second = inner.add_state_after(first, "second")
    _, beta, _ = second.add_mapped_tasklet(
        "beta", dict(i="1:5", j="1:4"), {"a": dace.Memlet("x[i, j]")}, "o = 2 * a",
        {"o": dace.Memlet("y[i, j]")}, external_edges=True,
    )
    alpha.map.label, beta.map.label = "alpha__h_map_123456789", "beta__v_map_987654321"
    outer = dace.SDFG("outer_program")
    outer.add_array("A", [6, 5], dace.float64)
    outer.add_array("B", [6, 5], dace.float64)
    state = outer.add_state("call")
    node = state.add_nested_sdfg(inner, {}, {"x", "y"})
    state.add_edge(node, "x", state.add_write("A"), None, dace.Memlet("A[0:6, 0:5]"))
    state.add_edge(node, "y", state.add_write("B"), None, dace.Memlet("B[0:6, 0:5]"))
    return outer


def test_nested_sdfg_with_several_stencils_is_searched(tmp_path, capfd):
    import numpy as np

    sdfg = _two_stencil_nested_program()
    sdfg.build_folder = str(tmp_path / "nested")
    kernels = insert_debug_checks(sdfg, DebugChecks.parse("nan;trace:point=2,3,0;progress"))
    assert [(k.describe(), [f.name for f in k.fields]) for k in kernels] == [
        ("k1 alpha__h_map (stencil alpha)", ["A"]),  # shown by the outer names
        ("k2 beta__v_map (stencil beta)", ["B"]),
    ]
    sdfg.validate()
    with dace_settings():
        program = sdfg.compile()
    a, b = np.zeros((6, 5)), np.zeros((6, 5))
    capfd.readouterr()
    program(A=a, B=b)
    err = capfd.readouterr().err
    assert "[orchestra trace] #1 k1/2 alpha__h_map (stencil alpha) A(2, 3) = 32\n" in err
    assert "[orchestra trace] #2 k2/2 beta__v_map (stencil beta) B(2, 3) = 64\n" in err
    assert b[2, 3] == 64


def _cuda_include():
    import shutil
    from pathlib import Path

    candidates = [os.environ.get("CUDA_HOME", ""), "/usr/local/cuda"]
    nvcc = shutil.which("nvcc")
    if nvcc:
        candidates.append(str(Path(nvcc).resolve().parents[1]))
    for root in candidates:
        if root and (Path(root) / "include" / "cuda_runtime.h").exists():
            return Path(root) / "include"
    return None


def test_gpu_build_syncs_after_each_kernel_and_compiles(parsed_sdfg, tmp_path):
    """GPU code path, through the optimize stage with ``on_gpu``: a sync state after every
    kernel and host mirrors of device fields; the host code compiles against the CUDA
    runtime headers (no GPU needed; there is none to run on here)."""
    import subprocess
    from pathlib import Path

    import dace
    from dace.codegen import compiler

    checks = DebugChecks.parse("nan;trace:point=4,3,1;progress")
    sdfg = optimized(parsed_sdfg, on_gpu=True, debug_checks=checks)
    folder = tmp_path / "gpu"
    sdfg.build_folder = str(folder)
    kernels = find_kernels(sdfg)  # finds the same kernels again (now followed by checks)
    assert [k.stencil for k in kernels] == list(STENCIL_ORDER) and all(k.on_gpu for k in kernels)
    for kernel in kernels:
        (edge,) = kernel.state.parent_graph.out_edges(kernel.state)
        assert edge.dst.label == f"orchestra_debug_k{kernel.index}_sync"
        (edge,) = edge.dst.parent_graph.out_edges(edge.dst)
        assert edge.dst.label == f"orchestra_debug_k{kernel.index}"
    mirrors = [name for name in sdfg.arrays if name.startswith("__dbg_host_")]
    assert len(mirrors) == 3 and all(sdfg.arrays[m].storage == dace.StorageType.CPU_Heap for m in mirrors)
    with dace_settings():
        code_objects = sdfg.generate_code()
    compiler.generate_program_folder(sdfg, code_objects, str(folder))
    (host,) = (folder / "src" / "cpu").glob("*.cpp")
    text = host.read_text()
    assert text.count("orchestra_debug::gpu_sync(kernel") == len(kernels)
    include = _cuda_include()
    if include is None:
        pytest.skip("CUDA headers not found: GPU host code generated but not compiled")
    runtime = Path(dace.__file__).parent / "runtime" / "include"
    result = subprocess.run(
        ["c++", "-std=c++20", "-DWITH_CUDA", f"-I{runtime}", f"-I{include}", "-fsyntax-only", str(host)],
        capture_output=True, text=True, timeout=300,
    )
    assert result.returncode == 0, result.stderr[-4000:]

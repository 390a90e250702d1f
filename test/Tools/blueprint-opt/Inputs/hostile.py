#!/usr/bin/env python3
"""Writes one hostile input to stdout: `hostile.py KIND [N]`.

Kinds: utf8-op (an op name with a \\xff byte), kv-heads-zero, mesh-2p40,
participants N, nested-modules N, nested-if N, nested-array N, nested-dict N,
utf8-symbol (a mesh @"w\\xff" used by dist.rank), utf8-nested-symbol (the
bad name nested in a symbol reference inside an array),
from-elements FORM N (tensor.from_elements of N elements from one operand;
FORM: custom, generic, vector, alias).
"""
import sys

HEADER = 'dist.header schema "blueprint.dist" version "1.0" model "sha256:' + "0" * 64 + '"'


def main():
    kind = sys.argv[1]
    n = int(sys.argv[2]) if len(sys.argv) > 2 and sys.argv[2].isdigit() else 0
    out = sys.stdout.buffer
    if kind == "utf8-op":
        out.write(b'"dist.\xffbad"() : () -> ()\n')
    elif kind == "kv-heads-zero":
        params = ", ".join(["%p"] * 10)
        types = ", ".join(["tensor<64xf16>"] * 10)
        out.write(('model.header schema "blueprint.model" version "1.0"\n'
                   'func.func @f() {\n'
                   '  %x = model.value "x" input : tensor<1x8x64xf16>\n'
                   '  %p = model.value "p" parameter : tensor<64xf16>\n'
                   f'  %y, %kv = model.decoder_inference "prefill" prefill(%x, {params}) '
                   'datatype = float16 kv_datatype = float16 effects(mutation) {'
                   'hidden = 64 : i64, ffn_hidden = 256 : i64, heads = 4 : i64, kv_heads = 0 : i64, head_dim = 16 : i64, '
                   'batch = 1 : i64, query_tokens = 8 : i64, context_tokens = 8 : i64} : '
                   f'(tensor<1x8x64xf16>, {types}) -> (tensor<1x8x64xf16>, tensor<2x1x8x16xf16>)\n'
                   '  return\n}\n').encode())
    elif kind == "mesh-2p40":
        out.write((HEADER + '\ndist.mesh @m(axes = ["a", "b"], shape = [1048576, 1048576])\n'
                   'func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {\n'
                   '  %y = dist.all_reduce %x on @m over [0, 1] axes ["a", "b"] reduction = sum phase = forward '
                   'bytes = 16 {id = "ar", lineage = "l"} : tensor<4xf32>\n'
                   '  return %y : tensor<4xf32>\n}\n').encode())
    elif kind == "participants":
        ranks = ", ".join(str(i) for i in range(n))
        out.write((HEADER + f'\ndist.mesh @m(axes = ["x"], shape = [{n}])\n'
                   'func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {\n'
                   f'  %y = dist.all_reduce %x on @m over [{ranks}] reduction = sum phase = forward '
                   'bytes = 16 {id = "ar", lineage = "l"} : tensor<4xf32>\n'
                   '  return %y : tensor<4xf32>\n}\n').encode())
    elif kind == "utf8-symbol":
        out.write(HEADER.encode() + b'\ndist.mesh @"w\xff"(axes = ["tp"], shape = [2])\n'
                  b'func.func @f() -> index {\n  %r = dist.rank on @"w\xff"\n  return %r : index\n}\n')
    elif kind == "utf8-nested-symbol":
        out.write(b'func.func @f() attributes {refs = [@a::@"b\xff"]} {\n  return\n}\n')
    elif kind == "from-elements":
        form = sys.argv[2]
        n = int(sys.argv[3])
        body = {
            "custom": f"%t = tensor.from_elements %a : tensor<{n}xindex>",
            "generic": f'%t = "tensor.from_elements"(%a) : (index) -> tensor<{n}xindex>',
            "vector": f"%t = vector.from_elements %a : vector<{n}xindex>",
            "alias": "%t = tensor.from_elements %a : !big",
        }[form]
        result = f"vector<{n}xindex>" if form == "vector" else f"tensor<{n}xindex>"
        alias = f"!big = tensor<{n}xindex>\n" if form == "alias" else ""
        out.write((f"{alias}func.func @f(%a: index) -> {result} {{\n  {body}\n  return %t : {result}\n}}\n").encode())
    elif kind == "nested-modules":
        out.write(("module {" * n + "}" * n + "\n").encode())
    elif kind == "nested-if":
        out.write(("func.func @f(%c: i1) {\n" + "scf.if %c {\n" * n + "}\n" * n + "return\n}\n").encode())
    elif kind == "nested-array":
        out.write((HEADER + " {x = " + "[" * n + "]" * n + "}\n").encode())
    elif kind == "nested-dict":
        out.write((HEADER + " {x = " + "{a = " * n + "1" + "}" * n + "}\n").encode())
    else:
        sys.exit(f"unknown kind {kind}")


if __name__ == "__main__":
    main()

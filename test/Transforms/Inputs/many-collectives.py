"""Writes a dist module to stdout: `many-collectives.py many N` (a chain of
N all-reduces, ids ar0 .. ar{N-1}) or `many-collectives.py long N` (one
all-reduce whose id is N bytes long)."""
import sys
kind, n = sys.argv[1], int(sys.argv[2])
print('dist.header schema "blueprint.dist" version "1.0" model "sha256:' + "1"*64 + '"')
print('dist.mesh @world(axes = ["tp"], shape = [4])')
print('func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {')
if kind == "many":
    prev = "%x"
    for i in range(n):
        print(f'  %y{i} = dist.all_reduce {prev} on @world over [0, 1, 2, 3] reduction = sum phase = forward bytes = 16 {{id = "ar{i}", lineage = "l"}} : tensor<4xf32>')
        prev = f"%y{i}"
    print(f'  return {prev} : tensor<4xf32>')
else:
    ident = "a" * n
    print(f'  %y = dist.all_reduce %x on @world over [0, 1, 2, 3] reduction = sum phase = forward bytes = 16 {{id = "{ident}", lineage = "l"}} : tensor<4xf32>')
    print('  return %y : tensor<4xf32>')
print('}')

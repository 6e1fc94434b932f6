#!/bin/sh
# Write the hand-made .safetensors seeds of fuzz_safetensors (tests/fuzz/seeds/safetensors/
# two, scalar, empty; tiny_model there is `kvscope export` of a 1-layer, C = 4 model).
# usage: sh tests/fuzz/seeds.sh tests/fuzz/seeds/safetensors
set -e
mkdir -p "$1"
seed() { # seed NAME HEADER DATA_BYTES
    len=$(printf '%s' "$2" | wc -c)
    { printf "\\$(printf %03o $((len % 256)))\\$(printf %03o $((len / 256)))\\000\\000\\000\\000\\000\\000"
      printf '%s' "$2"
      head -c "$3" /dev/zero; } > "$1/$4"
}
seed "$1" '{"__metadata__":{"format":"pt"},"a":{"dtype":"F16","shape":[2,2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[1],"data_offsets":[8,12]}}' 12 two
seed "$1" '{"w":{"dtype":"BF16","shape":[],"data_offsets":[0,2]},"m":{"dtype":"I64","shape":[0,3],"data_offsets":[2,2]}}  ' 2 scalar
seed "$1" '{}' 0 empty

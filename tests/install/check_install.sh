#!/usr/bin/env bash
# The installed library is usable on its own: install the build into a fresh prefix, then
# build examples/cpp/main.cpp against it, as a user would, with CMake's find_package(lrnn)
# (a consumer of the README's three lines and nothing else: lrnn::lrnn carries C++20 and its
# dependencies), with examples/cpp's own CMakeLists.txt and with pkg-config, and run the
# programs (each trains XOR and exits 1 unless learned). lrnn.pc must name no absolute path
# outside the prefix (it moves with the installed tree), and a build configured without
# LRNN_NATIVE must hold no AVX instruction (it runs on any x86-64 CPU).
# Usage: check_install.sh SOURCE_DIR BUILD_DIR
set -euo pipefail
src=$(cd "$1" && pwd)
build=$(cd "$2" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
prefix="$work/prefix"

cmake --install "$build" --prefix "$prefix" > "$work/install.log"
for f in lib/liblrnn.a include/lrnn/lrnn.hpp lib/cmake/lrnn/lrnnConfig.cmake lib/pkgconfig/lrnn.pc bin/lrnn; do
  [ -e "$prefix/$f" ] || { echo "install did not write $f"; cat "$work/install.log"; exit 1; }
done

generator=()
command -v ninja > /dev/null && generator=(-G Ninja)
# build_with_cmake NAME SOURCE_DIR: configure and build against the installed prefix.
build_with_cmake() {
  cmake -S "$2" -B "$work/$1" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_PREFIX_PATH="$prefix" > "$work/$1-configure.log" || { cat "$work/$1-configure.log"; exit 1; }
  cmake --build "$work/$1" > "$work/$1-build.log" || { cat "$work/$1-build.log"; exit 1; }
}

echo "== find_package(lrnn) + lrnn::lrnn, no other line"
mkdir -p "$work/consumer"
cp "$src/examples/cpp/main.cpp" "$work/consumer/"
cat > "$work/consumer/CMakeLists.txt" <<'CMAKE'
cmake_minimum_required(VERSION 3.20)
project(consumer LANGUAGES CXX)
find_package(lrnn REQUIRED)
add_executable(app main.cpp)
target_link_libraries(app PRIVATE lrnn::lrnn)
CMAKE
build_with_cmake consumer-build "$work/consumer"
(cd "$work" && "$work/consumer-build/app")

echo "== examples/cpp on its own"
build_with_cmake example-build "$src/examples/cpp"
(cd "$work" && "$work/example-build/lrnn_example_cpp")

echo "== pkg-config"
# Every absolute path in lrnn.pc would tie it to one machine: only \${pcfiledir}-relative ones.
if grep -nE '(^|[[:space:]=])/' "$prefix/lib/pkgconfig/lrnn.pc"; then
  echo "lrnn.pc names absolute paths (above): it must be relative to \${pcfiledir}"
  exit 1
fi
# Moved elsewhere, the installed tree still builds through its lrnn.pc.
mv "$prefix" "$work/moved" && prefix="$work/moved"
export PKG_CONFIG_PATH="$prefix/lib/pkgconfig"
# shellcheck disable=SC2046
g++ -O2 "$src/examples/cpp/main.cpp" -o "$work/example_pc" $(pkg-config --cflags --libs lrnn)
(cd "$work" && "$work/example_pc")

echo "== portability"
if [ "$(uname -m)" != x86_64 ]; then
  echo "not x86-64: the AVX check does not apply"
elif grep -q '^LRNN_NATIVE:BOOL=ON' "$build/CMakeCache.txt"; then
  echo "configured with -DLRNN_NATIVE=ON: liblrnn is for this CPU only (not checked)"
else
  # AVX registers (ymm, zmm) appear only in code compiled for a CPU beyond x86-64's baseline.
  avx=$(objdump -d --no-show-raw-insn "$prefix/lib/liblrnn.a" | grep -cE '%[yz]mm' || true)
  if [ "$avx" -ne 0 ]; then
    echo "liblrnn.a was built without LRNN_NATIVE but holds $avx AVX instructions"
    exit 1
  fi
  echo "liblrnn.a holds no AVX instruction: it runs on any x86-64 CPU"
fi
echo "installed lrnn works with find_package and pkg-config"

#!/usr/bin/env bash
# The installed library is usable on its own: install the build into a fresh prefix, then
# build examples/cpp against it twice, as a user would, with CMake's find_package(lrnn)
# and with pkg-config, and run both programs (each trains XOR and exits 1 unless learned).
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

echo "== find_package(lrnn)"
generator=()
command -v ninja > /dev/null && generator=(-G Ninja)
cmake -S "$src/examples/cpp" -B "$work/cmake-build" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_PREFIX_PATH="$prefix" > "$work/configure.log" || { cat "$work/configure.log"; exit 1; }
cmake --build "$work/cmake-build" > "$work/build.log" || { cat "$work/build.log"; exit 1; }
(cd "$work" && "$work/cmake-build/lrnn_example_cpp")

echo "== pkg-config"
export PKG_CONFIG_PATH="$prefix/lib/pkgconfig"
# shellcheck disable=SC2046
g++ -O2 "$src/examples/cpp/main.cpp" -o "$work/example_pc" $(pkg-config --cflags --libs lrnn)
(cd "$work" && "$work/example_pc")
echo "installed lrnn works with find_package and pkg-config"

#!/usr/bin/env bash
# Idempotent set-up for a fresh clone (npm start and npm test run it first); quiet when all is there.
#   bash scripts/setup.sh [--test]     --test: also the browser the Chromium tests need
# - npm ci when node_modules is missing or older than package-lock.json (npm install when there is no lock);
# - with no GPU Vulkan driver: Debian's chromium (SwiftShader, for Dawn under Node) and mesa-vulkan-drivers
#   (lavapipe, for wgpu under Deno); installed with apt-get when root, else the command to run is printed;
# - the shaders embedded into src/generated/shaders.ts.
set -euo pipefail
cd "$(dirname "$0")/.."

want_browser=0
[[ "${1:-}" == "--test" ]] && want_browser=1

say() { echo "setup: $*" >&2; }

if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
  say "Node.js >= 20 with npm is required (Debian: apt-get install nodejs npm, or https://nodejs.org)"
  exit 1
fi

# ---- npm packages ----
if [[ ! -f package-lock.json ]]; then
  say "no package-lock.json: npm install (commit the lock file it writes)"
  npm install --no-audit --no-fund --loglevel=error
elif [[ ! -f node_modules/.package-lock.json || package-lock.json -nt node_modules/.package-lock.json ]]; then
  say "installing npm packages (npm ci)"
  npm ci --no-audit --no-fund --loglevel=error
fi

# The deno package puts its binary at node_modules/deno/deno in a postinstall script; when npm skipped
# install scripts, the same (offline) step links it from the platform package.
if [[ ! -x node_modules/deno/deno && -f node_modules/deno/install.cjs ]]; then
  node node_modules/deno/install.cjs >/dev/null
fi

# ---- Vulkan drivers ----
# A GPU driver needs an ICD that is not a CPU one and a device node (as src/gpu/runtime.ts decides).
gpu_driver=0
for icd in /usr/share/vulkan/icd.d/* /etc/vulkan/icd.d/* /usr/local/nvidia/share/vulkan/icd.d/*; do
  [[ -e "$icd" ]] || continue
  case "$(basename "$icd")" in *lvp* | *lavapipe* | *swiftshader*) continue ;; esac
  if [[ -e /dev/nvidiactl ]] || compgen -G '/dev/dri/renderD*' >/dev/null; then gpu_driver=1; fi
done

missing=()
if [[ $gpu_driver == 0 || $want_browser == 1 ]]; then
  [[ -f /usr/lib/chromium/vk_swiftshader_icd.json && -x /usr/bin/chromium ]] || missing+=(chromium)
fi
if [[ $gpu_driver == 0 ]]; then
  compgen -G '/usr/share/vulkan/icd.d/lvp_icd*.json' >/dev/null || missing+=(mesa-vulkan-drivers)
  compgen -G '/usr/lib/*/libvulkan.so.1' >/dev/null || missing+=(libvulkan1)
fi

if ((${#missing[@]})); then
  if [[ $(id -u) == 0 ]] && command -v apt-get >/dev/null; then
    say "no GPU Vulkan driver: installing ${missing[*]} (CPU WebGPU drivers)"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq >/dev/null
    apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  else
    say "missing CPU WebGPU drivers; install them with:"
    say "  sudo apt-get install --no-install-recommends ${missing[*]}"
    say "(chromium ships SwiftShader for Dawn under Node and runs the browser tests; mesa-vulkan-drivers is lavapipe for Deno)"
    exit 1
  fi
fi

# ---- shaders ----
npm run --silent embed

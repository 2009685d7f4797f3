// Element type conversions done on bit patterns, so results are exact and identical everywhere:
// WGSL's own f32->f16 conversion may round either way and is undefined for out-of-range values.
// f16 and bf16 data are addressed as u32 words of two little-endian halves; thread i makes word i
// (or f32 elements 2i and 2i+1). Needs no shader-f16. Grid folded to 2-D past 65535 workgroups.
struct Params { n: u32, _p0: u32, _p1: u32, _p2: u32 }

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> src: array<u32>;
@group(0) @binding(2) var<storage, read_write> dst: array<u32>;

fn pairIndex(gid: vec3u, nwg: vec3u) -> u32 { return gid.x + gid.y * nwg.x * 256u; }

// f32 bits -> f16 bits, round to nearest even; overflow -> inf; NaN -> quiet NaN (src/gpu/dtype.ts f32ToF16Bits).
fn f16FromF32(x: u32) -> u32 {
  let sign = (x >> 16u) & 0x8000u;
  let exp = i32((x >> 23u) & 0xffu);
  var mant = x & 0x7fffffu;
  if (exp == 255) { return sign | 0x7c00u | select(0u, 0x200u, mant != 0u); }
  var e = exp - 112; // rebias 127 -> 15
  if (e >= 31) { return sign | 0x7c00u; }
  if (e <= 0) {
    if (e < -10) { return sign; }
    mant |= 0x800000u;
    let shift = u32(14 - e);
    let half = 1u << (shift - 1u);
    var r = mant >> shift;
    let rem = mant & ((1u << shift) - 1u);
    if (rem > half || (rem == half && (r & 1u) == 1u)) { r += 1u; }
    return sign | r; // a carry into bit 10 is the smallest normal, as it should be
  }
  var r = mant >> 13u;
  let rem = mant & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (r & 1u) == 1u)) {
    r += 1u;
    if (r == 0x400u) {
      r = 0u;
      e += 1;
      if (e >= 31) { return sign | 0x7c00u; }
    }
  }
  return sign | (u32(e) << 10u) | r;
}

// f16 bits (low 16 of h) -> f32 bits, exact; NaN payloads kept.
fn f32FromF16(h: u32) -> u32 {
  let sign = (h & 0x8000u) << 16u;
  let exp = (h >> 10u) & 0x1fu;
  let mant = h & 0x3ffu;
  if (exp == 0u) { return sign | bitcast<u32>(ldexp(f32(mant), -24)); } // zero or subnormal: mant·2^-24
  if (exp == 31u) { return sign | 0x7f800000u | (mant << 13u); }
  return sign | ((exp + 112u) << 23u) | (mant << 13u);
}

@compute @workgroup_size(256)
fn bf16_to_f32(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
  let i = pairIndex(gid, nwg);
  if (2u * i >= p.n) { return; }
  let w = src[i];
  dst[2u * i] = w << 16u;
  if (2u * i + 1u < p.n) { dst[2u * i + 1u] = w & 0xffff0000u; }
}

@compute @workgroup_size(256)
fn bf16_to_f16(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
  let i = pairIndex(gid, nwg);
  if (2u * i >= p.n) { return; }
  let w = src[i];
  let hi = select(0u, f16FromF32(w & 0xffff0000u), 2u * i + 1u < p.n);
  dst[i] = f16FromF32(w << 16u) | (hi << 16u);
}

@compute @workgroup_size(256)
fn f32_to_f16(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
  let i = pairIndex(gid, nwg);
  if (2u * i >= p.n) { return; }
  var hi = 0u;
  if (2u * i + 1u < p.n) { hi = f16FromF32(src[2u * i + 1u]); }
  dst[i] = f16FromF32(src[2u * i]) | (hi << 16u);
}

@compute @workgroup_size(256)
fn f16_to_f32(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
  let i = pairIndex(gid, nwg);
  if (2u * i >= p.n) { return; }
  let w = src[i];
  dst[2u * i] = f32FromF16(w & 0xffffu);
  if (2u * i + 1u < p.n) { dst[2u * i + 1u] = f32FromF16(w >> 16u); }
}

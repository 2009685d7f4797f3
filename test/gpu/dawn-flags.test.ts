// The Dawn toggles troupe asks dawn.node for, and the effect of TROUPE_DAWN_ROBUSTNESS / TROUPE_DAWN_VALIDATION on them.
import { describe, expect, it } from 'vitest';
import { dawnFlags } from '../../src/gpu/runtime.ts';

describe('dawnFlags', () => {
  it('keeps robustness unless TROUPE_DAWN_ROBUSTNESS=off, and names a bad value', () => {
    expect(dawnFlags({})).toEqual(['enable-dawn-features=allow_unsafe_apis,vulkan_enable_f16_on_nvidia']);
    expect(dawnFlags({ TROUPE_DAWN_ROBUSTNESS: 'on' })).toEqual(dawnFlags({}));
    expect(dawnFlags({ TROUPE_DAWN_ROBUSTNESS: 'off' })[0]).toMatch(/,disable_robustness$/);
    expect(() => dawnFlags({ TROUPE_DAWN_ROBUSTNESS: 'false' })).toThrow(/TROUPE_DAWN_ROBUSTNESS=false: expected on or off/);
  });

  it('keeps validation unless TROUPE_DAWN_VALIDATION=off, and names a bad value', () => {
    expect(dawnFlags({ TROUPE_DAWN_VALIDATION: 'on' })).toEqual(dawnFlags({}));
    expect(dawnFlags({ TROUPE_DAWN_VALIDATION: 'off' })[0]).toMatch(/,skip_validation$/);
    expect(dawnFlags({ TROUPE_DAWN_VALIDATION: 'off', TROUPE_DAWN_ROBUSTNESS: 'off' })[0]).toMatch(/,disable_robustness,skip_validation$/);
    expect(() => dawnFlags({ TROUPE_DAWN_VALIDATION: '0' })).toThrow(/TROUPE_DAWN_VALIDATION=0: expected on or off/);
  });
});

// Errors of the code sandbox itself (never of the graded program: a failing program is a reward-0 grade).

export class SandboxError extends Error {
  override name = 'SandboxError';
}

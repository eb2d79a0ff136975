/**
 * A reason the hub cannot start that an operator can act on (a bad setting, a data directory in
 * use). `main` prints the message and exits without a stack trace.
 */
export class StartupError extends Error {
  override readonly name: string = 'StartupError';
}

/** Where a command writes and what it reads; `main()` takes it so tests run commands in-process. */
export interface CliIo {
  stdout: { write(text: string): unknown };
  stderr: { write(text: string): unknown; isTTY?: boolean };
  /** The environment (SDK settings, `RESOURCES`, ...). Default `process.env`. */
  env: Readonly<Record<string, string | undefined>>;
  /** Read for `send -`. Default `process.stdin`. */
  stdin?: AsyncIterable<string | Buffer> | Iterable<string>;
}

/** Exit codes: 0 ok, 1 failure, 2 bad input (nothing sent), 64 usage error. */
export const EXIT = { ok: 0, failure: 1, badInput: 2, usage: 64 } as const;

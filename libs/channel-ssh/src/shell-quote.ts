/**
 * Quotes one argument for a POSIX shell: the whole value inside single quotes, each `'` written as `'\''`.
 * Inside single quotes a POSIX shell gives no character a meaning, so the value reaches the program as one
 * argument, byte for byte: `$(…)`, backticks, `;`, `*`, `~`, spaces and newlines included.
 *
 * @throws RangeError for a NUL byte, which no argument can carry
 */
export function shellQuote(arg: string): string {
  if (arg.includes('\0')) throw new RangeError('an argument cannot hold a NUL byte');
  return `'${arg.replaceAll("'", `'\\''`)}'`;
}

/**
 * The durable marker protocol on the host (README.md "Durable marker protocol"). Both scripts run under
 * `/bin/sh -c '<script>' <name> <arguments…>`, every argument quoted by `shellQuote`: values only ever reach the
 * scripts as positional parameters, and the command runs as `"$@"`, never through `eval`.
 */

/** `$0` of the wrapper, visible in the host's process list. */
export const MARKER_WRAPPER_NAME = 'oncegate-marker';
/** `$0` of the probe. */
export const MARKER_PROBE_NAME = 'oncegate-probe';
/** The wrapper's own exit status when it could not set up the marker: the command did not start. */
export const MARKER_SETUP_FAILED = 125;

/**
 * `oncegate-marker <marker dir> <execution id> <attempt> <cwd or ''> <argv…>`
 *
 * 1. ignores SIGHUP from here on (inherited by everything it starts);
 * 2. creates the marker directory and this attempt's output files, then writes `<id>.started` atomically
 *    (temporary file, `mv`, `sync`) — all before any work; if any of this fails it exits 125 and nothing ran;
 * 3. runs a subshell with stdin from /dev/null and stdout/stderr into the output files on the host, so no write
 *    of the command ever meets a dead SSH pipe; the subshell `cd`s to the working directory (a failure is the
 *    command's status), runs `"$@"` in a session of its own (`setsid -w` where available), then writes
 *    `<id>.done` with the exit status atomically;
 * 4. waits for that subshell, sends the output files back over the channel, deletes them once sent, and exits
 *    with the command's status.
 *
 * If the connection dies, the wrapper at most dies of SIGPIPE while sending the output back; the subshell and the
 * command hold no descriptor to the connection, ignore SIGHUP and keep running, and `<id>.done` is still written.
 */
export const MARKER_WRAPPER_SCRIPT = `trap "" HUP
dir=$1 id=$2 attempt=$3 cwd=$4
shift 4
fail() {
  printf "oncegate-marker: %s\\n" "$1" >&2
  exit 125
}
mark() {
  name=$1
  shift
  printf "%s\\n" "$@" >"$dir/.$id.$name.$$" && mv -f -- "$dir/.$id.$name.$$" "$dir/$id.$name" || return 1
  sync -- "$dir/$id.$name" "$dir" 2>/dev/null || sync
}
case $id in "" | .* | */*) fail "invalid execution id" ;; esac
case $attempt in "" | *[!0-9]*) fail "invalid attempt number" ;; esac
out=$dir/$id.$attempt.stdout
err=$dir/$id.$attempt.stderr
mkdir -p -- "$dir" || fail "cannot create the marker directory"
{ : >"$out" && : >"$err"; } || fail "cannot create the output files"
mark started "attempt=$attempt" || fail "cannot write the started marker"
(
  if [ -n "$cwd" ]; then
    cd -- "$cwd" || {
      status=$?
      mark done "exit_status=$status" "attempt=$attempt"
      exit "$status"
    }
  fi
  if setsid -w true 2>/dev/null; then setsid -w -- "$@"; else "$@"; fi
  status=$?
  mark done "exit_status=$status" "attempt=$attempt"
  exit "$status"
) </dev/null >"$out" 2>"$err"
status=$?
[ -f "$dir/$id.done" ] || printf "oncegate-marker: could not write the done marker\\n" >&2
cat -- "$out" && rm -f -- "$out"
cat -- "$err" >&2 && rm -f -- "$err"
exit "$status"
`;

/**
 * `oncegate-probe <marker dir> <execution id>`: prints `completed`, `started` or `absent` on the first line,
 * then the marker file's `key=value` lines. Exits 125 when the directory exists but cannot be searched, so an
 * unreadable directory is never reported as an absent marker.
 */
export const MARKER_PROBE_SCRIPT = `dir=$1 id=$2
case $id in "" | .* | */*) exit 125 ;; esac
if [ -e "$dir" ] && { [ ! -d "$dir" ] || [ ! -x "$dir" ]; }; then
  printf "oncegate-probe: cannot search the marker directory\\n" >&2
  exit 125
fi
if [ -f "$dir/$id.done" ]; then
  echo completed
  cat -- "$dir/$id.done"
elif [ -f "$dir/$id.started" ]; then
  echo started
  cat -- "$dir/$id.started"
else
  echo absent
fi
`;

/** What the probe script printed, parsed; `undefined` when it is not the probe's output. */
export type ProbeOutput =
  | { readonly state: 'completed'; readonly exitStatus: number; readonly attempt: number | null }
  | { readonly state: 'started'; readonly attempt: number | null }
  | { readonly state: 'absent' };

export function parseProbeOutput(text: string): ProbeOutput | undefined {
  const [state, ...lines] = text.split('\n').filter((line) => line !== '');
  const fields = new Map<string, string>();
  for (const line of lines) {
    const at = line.indexOf('=');
    if (at > 0) fields.set(line.slice(0, at), line.slice(at + 1));
  }
  const integer = (name: string): number | null => {
    const value = fields.get(name);
    return value !== undefined && /^\d{1,9}$/.test(value) ? Number(value) : null;
  };
  switch (state) {
    case 'completed': {
      const exitStatus = integer('exit_status');
      return exitStatus === null ? undefined : { state, exitStatus, attempt: integer('attempt') };
    }
    case 'started':
      return { state, attempt: integer('attempt') };
    case 'absent':
      return lines.length === 0 ? { state } : undefined;
    default:
      return undefined;
  }
}

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
 * The wrapper's exit status when it refused to start because another attempt of the same execution had already
 * claimed it (that attempt's markers tell what happened); with a first stderr line `oncegate-marker: refused: …`.
 */
export const MARKER_CLAIMED_ELSEWHERE = 124;

/**
 * `oncegate-marker <marker dir> <execution id> <attempt> <cwd or ''> <argv…>`
 *
 * 1. ignores SIGHUP from here on (inherited by everything it starts);
 * 2. claims the execution: `mkdir <id>.claim` succeeds for exactly one attempt, however late the others start. An
 *    attempt that finds the claim (or a `.started`/`.done` marker) taken leaves `<id>.<attempt>.refused` naming the
 *    attempt that holds it (written as the markers are, whole or not at all) and exits 124 without running anything
 *    or touching the markers;
 * 3. creates this attempt's output files (with `true >file`: a redirection error on the special built-in `:`
 *    would end the shell with status 2 instead of 125), then writes `<id>.started` atomically (temporary file,
 *    `mv`, `sync`) — all before any work; if any of this fails it gives the claim back and exits 125: nothing ran;
 * 4. runs a subshell with stdin from /dev/null and stdout/stderr into the output files on the host, so no write
 *    of the command ever meets a dead SSH pipe; the subshell `cd`s to the working directory (a failure is the
 *    command's status), runs `"$@"` in a session of its own (`setsid -w` where available), then writes
 *    `<id>.done` with the exit status atomically;
 * 5. waits for that subshell, sends the output files back over the channel, deletes them once sent, and exits
 *    with the command's status.
 *
 * If the connection dies, the wrapper at most dies of SIGPIPE while sending the output back; the subshell and the
 * command hold no descriptor to the connection, ignore SIGHUP and keep running, and `<id>.done` is still written.
 * "No marker yet" never proves that no attempt will start (sshd may exec it late): the claim is what keeps a late
 * attempt from running after another one.
 */
export const MARKER_WRAPPER_SCRIPT = `trap "" HUP
dir=$1 id=$2 attempt=$3 cwd=$4
shift 4
claimed=
fail() {
  [ -z "$claimed" ] || rmdir -- "$dir/$id.claim" 2>/dev/null
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
if mkdir -- "$dir/$id.claim" 2>/dev/null; then claimed=yes; fi
if [ -z "$claimed" ] || [ -e "$dir/$id.started" ] || [ -e "$dir/$id.done" ]; then
  [ -d "$dir/$id.claim" ] || fail "cannot claim the execution"
  by=$(sed -n "s/^attempt=//p" <"$dir/$id.started" 2>/dev/null)
  case $by in "" | *[!0-9]*) by=unknown ;; esac
  mark "$attempt.refused" "claimed_by=$by" || true
  printf "oncegate-marker: refused: another attempt claimed this execution (claimed_by=%s); nothing was run\\n" "$by" >&2
  exit 124
fi
{ true >"$out" && true >"$err"; } || fail "cannot create the output files"
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
 * then the marker file's `key=value` lines; for `completed`, `stdout_kept=yes` / `stderr_kept=yes` when that
 * attempt's output files are still on the host and hold something (the connection that should have carried them
 * was lost; an empty file says nothing, and whether the wrapper removed it before the connection went is timing). A claim
 * without `.started` (an attempt between its claim and its marker) is `started`. Exits 125 when the directory
 * exists but cannot be searched, so an unreadable directory is never reported as an absent marker.
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
  n=$(sed -n "s/^attempt=//p" <"$dir/$id.done")
  case $n in "" | *[!0-9]*) n= ;; esac
  if [ -n "$n" ] && [ -s "$dir/$id.$n.stdout" ]; then echo stdout_kept=yes; fi
  if [ -n "$n" ] && [ -s "$dir/$id.$n.stderr" ]; then echo stderr_kept=yes; fi
elif [ -f "$dir/$id.started" ]; then
  echo started
  cat -- "$dir/$id.started"
elif [ -d "$dir/$id.claim" ]; then
  echo started
else
  echo absent
fi
`;

/** What the probe script printed, parsed; `undefined` when it is not the probe's output. */
export type ProbeOutput =
  | {
      readonly state: 'completed';
      readonly exitStatus: number;
      readonly attempt: number | null;
      /** That attempt's output files still on the host. */
      readonly kept: { readonly stdout: boolean; readonly stderr: boolean };
    }
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
      const kept = { stdout: fields.get('stdout_kept') === 'yes', stderr: fields.get('stderr_kept') === 'yes' };
      return exitStatus === null ? undefined : { state, exitStatus, attempt: integer('attempt'), kept };
    }
    case 'started':
      return { state, attempt: integer('attempt') };
    case 'absent':
      return lines.length === 0 ? { state } : undefined;
    default:
      return undefined;
  }
}

/** The wrapper's refusal of a late attempt, read from its exit status and first stderr line; else `undefined`. */
export function parseClaimRefusal(exitStatus: number, stderr: string): { readonly claimedBy: number | null } | undefined {
  if (exitStatus !== MARKER_CLAIMED_ELSEWHERE) return undefined;
  const match = /^oncegate-marker: refused: another attempt claimed this execution \(claimed_by=(\d{1,9}|unknown)\)/.exec(stderr);
  if (match === null) return undefined;
  return { claimedBy: match[1] === 'unknown' ? null : Number(match[1]) };
}

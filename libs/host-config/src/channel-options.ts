import { isMap, isScalar, isSeq, type Node } from 'yaml';
import { childPath, type ContractIssue, type Segment, type YamlContext } from '@oncegate/contracts';
import type { GatewayConfig } from './gateway-config';

/** A line and column of the configuration file (1-based). */
export interface FilePosition {
  readonly line: number;
  readonly column: number;
}

/** Where one value of a channel's options is written, and its key's position when it is a field. */
export interface OptionPosition extends FilePosition {
  readonly key?: FilePosition;
}

/**
 * One entry of `channels:` as written. Its meaning is the channel's (its options schema, checked by the process that
 * hosts it, which may be another than the one that read the file), so the entry keeps where each of its values is
 * written: a mistake is reported at its line and column whichever process finds it. Plain data, like the rest of the
 * configuration.
 */
export interface ChannelOptionsEntry {
  /** The options as the file holds them (YAML read as JSON values). */
  readonly options: Readonly<Record<string, unknown>>;
  /** The position of each value of the entry, by JSON pointer below it (`''` is the entry, `/tls/ca_file` a field of a field). */
  readonly positions: Readonly<Record<string, OptionPosition>>;
}

const CHANNEL_NAME = /^[a-z][a-z0-9-]*$/;

/** Why `name` cannot be a key of `channels:`, or `undefined`. */
export function channelNameProblem(name: string): string | undefined {
  return CHANNEL_NAME.test(name) ? undefined : `'${name}' is not a channel name ([a-z][a-z0-9-]*)`;
}

function pointerStep(segment: Segment): string {
  return `/${String(segment).replaceAll('~', '~0').replaceAll('/', '~1')}`;
}

/** Whether a YAML value is written empty (`field:`): it has no position of its own, so its key stands for it. */
function isEmpty(node: Node | null): boolean {
  return node === null || (isScalar(node) && node.value === null && (node.source ?? '') === '');
}

/** The positions of `node` and everything below it, keyed by JSON pointer from `pointer`. */
function collectPositions(ctx: YamlContext, node: Node, key: Node | undefined, pointer: string, into: Record<string, OptionPosition>): void {
  const keyAt = key === undefined ? undefined : ctx.positionOf(key.range?.[0] ?? 0);
  const at = isEmpty(node) && keyAt !== undefined ? keyAt : ctx.positionOf(node.range?.[0] ?? 0);
  into[pointer] = keyAt === undefined ? at : { ...at, key: keyAt };
  if (isMap(node)) {
    for (const pair of node.items) {
      if (!isScalar(pair.key)) continue;
      const value = ctx.resolve(pair.value) ?? (pair.key as Node);
      collectPositions(ctx, value, pair.key as Node, `${pointer}${pointerStep(String(pair.key.value))}`, into);
    }
  } else if (isSeq(node)) {
    node.items.forEach((item, index) => {
      const value = ctx.resolve(item);
      if (value !== null) collectPositions(ctx, value, undefined, `${pointer}${pointerStep(index)}`, into);
    });
  }
}

/** A `channels.<name>` entry read from its YAML node (`key` is its name's node), with the position of every value. */
export function channelOptionsEntry(ctx: YamlContext, node: Node, key: Node | undefined, options: Readonly<Record<string, unknown>>): ChannelOptionsEntry {
  const positions: Record<string, OptionPosition> = {};
  collectPositions(ctx, node, key, '', positions);
  return { options, positions };
}

/**
 * A problem of `channels.<name>` at `segments` inside the entry, as `file:line:column channels.<name>.<path>: reason`
 * prints it: at the field's key (`at: 'key'`, for a field that should not be there) or its value; a field that is not
 * written (a missing one) is placed at the nearest value above it. Without an entry, at the file's start.
 */
export function channelOptionsIssue(
  config: Pick<GatewayConfig, 'source' | 'channels'>,
  name: string,
  segments: readonly Segment[],
  reason: string,
  at: 'key' | 'value' = 'value',
): ContractIssue {
  const path = segments.reduce<string>((parent, segment) => childPath(parent, segment), childPath('channels', name));
  const positions = config.channels[name]?.positions ?? {};
  for (let depth = segments.length; depth >= 0; depth -= 1) {
    const found = positions[segments.slice(0, depth).map(pointerStep).join('')];
    if (found === undefined) continue;
    const where = at === 'key' && depth === segments.length && found.key !== undefined ? found.key : found;
    return { file: config.source, path, line: where.line, column: where.column, reason };
  }
  return { file: config.source, path, line: 1, column: 1, reason };
}

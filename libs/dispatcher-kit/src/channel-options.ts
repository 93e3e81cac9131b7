import type { ValidateFunction } from 'ajv';
import type { ContractIssue } from '@oncegate/contracts';
import { channelOptionsIssue, GatewayConfigError, type GatewayConfig } from '@oncegate/host-config';
import type { ChannelDefinition } from './channel-definition';
import { compileChannelSchema, schemaProblems } from './section-schema';

/** What the options of a channel are read from: the configuration's `channels` entries, and its file for messages. */
export type ChannelOptionsSource = Pick<GatewayConfig, 'source' | 'channels'>;

/** A channel's entry checked: the options its `open` is given, or every problem with its place in the file. */
export type ChannelOptionsCheck =
  | { readonly ok: true; readonly options: Readonly<Record<string, unknown>> }
  | { readonly ok: false; readonly issues: readonly ContractIssue[] };

/** How a process hosting a channel reads its `channels.<name>` entry. */
export interface ChannelOptionsReader {
  check(config: ChannelOptionsSource): ChannelOptionsCheck;
  /** @throws GatewayConfigError naming each problem as `file:line:column channels.<name>.<path>: reason` */
  read(config: ChannelOptionsSource): Readonly<Record<string, unknown>>;
}

/**
 * The reader of a channel's options. Its schema is compiled here, once, so that a schema Ajv cannot read fails when
 * the channel is defined rather than when a process first starts it. Defaults of the schema are filled in (Ajv's
 * `useDefaults`) on a copy: the configuration itself stays as the file has it.
 */
export function channelOptionsReader(definition: Pick<ChannelDefinition, 'name' | 'options'>): ChannelOptionsReader {
  const { name } = definition;
  const validate: ValidateFunction | undefined =
    definition.options === undefined ? undefined : compileChannelSchema(definition.options.schema, { useDefaults: true });
  const check = (config: ChannelOptionsSource): ChannelOptionsCheck => {
    const entry = Object.hasOwn(config.channels, name) ? config.channels[name] : undefined;
    if (validate === undefined) {
      if (entry === undefined) return { ok: true, options: {} };
      return { ok: false, issues: [channelOptionsIssue(config, name, [], `channel ${name} takes no options; remove the entry`, 'key')] };
    }
    const options = structuredClone(entry?.options ?? {}) as Record<string, unknown>;
    if (validate(options)) return { ok: true, options };
    // Misspelt fields first, as the configuration's own check lists them (a typo often explains the rest), then in file order.
    const issues = schemaProblems(validate.errors ?? [])
      .map(({ path, reason, field }) => ({ field, issue: channelOptionsIssue(config, name, path, reason, field ? 'key' : 'value') }))
      .sort((a, b) => Number(b.field) - Number(a.field) || a.issue.line - b.issue.line || a.issue.column - b.issue.column)
      .map(({ issue }) => issue);
    return { ok: false, issues };
  };
  return {
    check,
    read(config) {
      const checked = check(config);
      if (!checked.ok) throw new GatewayConfigError(checked.issues);
      return checked.options;
    },
  };
}

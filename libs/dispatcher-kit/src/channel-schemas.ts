import type { PluginSectionCheck } from '@oncegate/contracts';
import type { ChannelContract, ChannelDefinition } from './channel-definition';
import { sectionSchema } from './section-schema';

/**
 * What a channel publishes of itself (`oncegate channels schema <module>`): the JSON Schemas of its tools' `plugin:`
 * section and of its options (`channels.<name>` in oncegate.yaml), `null` for what it declares none of. A section
 * checked by code alone has no schema to publish.
 */
export interface PublishedChannelSchemas {
  readonly channel: string;
  readonly section: Record<string, unknown> | null;
  readonly options: Record<string, unknown> | null;
}

export function publishedSchemas(definition: Pick<ChannelDefinition, 'name' | 'contract' | 'options'>): PublishedChannelSchemas {
  return { channel: definition.name, section: definition.contract?.schema ?? null, options: definition.options?.schema ?? null };
}

/** The check of a channel's `plugin:` section: its schema (through `sectionSchema`), then its own check, or either alone. */
export function contractCheck(contract: ChannelContract): PluginSectionCheck {
  if (contract.schema !== undefined) return sectionSchema(contract.schema, contract.check);
  // Without a schema, the union leaves only the form with a check.
  return contract.check!;
}

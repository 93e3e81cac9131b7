import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { PluginSectionCheck } from '@oncegate/contracts';
import type { ChannelDefinition } from '@oncegate/dispatcher-kit';
import { sectionCheckOf } from '@oncegate/dispatcher-kit/host';

/**
 * What the CLI reads of a channel's kit (`defineChannel`'s result) among a module's exports: its definition. The kit
 * may be another copy than this one (the channel's own installed package): only the definition's fields are read.
 */
export interface ChannelModuleKit {
  readonly definition: Pick<ChannelDefinition, 'name' | 'classes' | 'contract' | 'options'>;
}

function isKit(value: unknown): value is ChannelModuleKit {
  const definition = (value as { definition?: { name?: unknown; open?: unknown } } | null)?.definition;
  return typeof definition?.name === 'string' && typeof definition.open === 'function';
}

/**
 * The channel kits each module exports (a channel's package, or its compiled entry point that exports the kit without
 * starting it), in order; or why a module cannot be used, after `label` (how the command line named it).
 */
export async function loadChannelKits(modules: readonly string[], label: (module: string) => string): Promise<ChannelModuleKit[] | string> {
  const kits: ChannelModuleKit[] = [];
  for (const module of modules) {
    let exports: Record<string, unknown>;
    try {
      // A path is taken from the working directory; anything else (a package name) is resolved as Node would.
      const specifier = /^(\.|\/)/.test(module) ? pathToFileURL(resolve(module)).href : module;
      exports = (await import(specifier)) as Record<string, unknown>;
    } catch (error) {
      return `${label(module)}: cannot load it: ${error instanceof Error ? error.message : String(error)}`;
    }
    const found = Object.values(exports).filter(isKit);
    if (found.length === 0) return `${label(module)}: it exports no channel (a kit made by defineChannel of @oncegate/dispatcher-kit)`;
    kits.push(...found);
  }
  return kits;
}

/** The check of a kit's tools' sections, as its service runs it at start; a channel without one takes any section. */
export function sectionCheckOfKit(kit: ChannelModuleKit): PluginSectionCheck {
  return sectionCheckOf(kit.definition) ?? (() => undefined);
}

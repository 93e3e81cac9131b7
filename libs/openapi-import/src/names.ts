import { RESERVED_TOOL_NAMES } from '@oncegate/contracts';

const TOOL_NAME_LENGTH = 64;

/** `text` with every run of characters outside `[A-Za-z0-9_-]` made one `_`, and no `_` at either end. */
export function nameOf(text: string): string {
  return text.replace(/[^A-Za-z0-9_-]+/g, '_').replace(/^_+|_+$/g, '');
}

/** Hands out names unique among those it gave, adding `_2`, `_3`… to a name already taken, within `maxLength`. */
export class UniqueNames {
  private readonly taken = new Set<string>();

  constructor(
    reserved: readonly string[] = [],
    private readonly maxLength = Number.POSITIVE_INFINITY,
  ) {
    for (const name of reserved) this.taken.add(name);
  }

  has(name: string): boolean {
    return this.taken.has(name);
  }

  /** `wanted`, or the first of `wanted_2`, `wanted_3`… that is free. */
  claim(wanted: string): string {
    let name = wanted.slice(0, this.maxLength);
    for (let n = 2; this.taken.has(name); n += 1) name = `${wanted.slice(0, this.maxLength - `_${n}`.length)}_${n}`;
    this.taken.add(name);
    return name;
  }
}

/** Why a tool is not named `operationId` as it is. */
export function renamedBecause(operationId: string, names: UniqueNames): string {
  const valid = nameOf(operationId);
  if (valid !== operationId) return 'is not a valid tool name (letters, digits, _ and -, at most 64)';
  if ((RESERVED_TOOL_NAMES as readonly string[]).includes(operationId)) return "is the name of the gateway's own tool";
  return names.has(operationId) ? 'is the name of another tool here' : 'is not a valid tool name';
}

/** Tool names of one file: valid MCP names, unique, never a name the gateway keeps for itself. */
export function toolNames(): UniqueNames {
  return new UniqueNames(RESERVED_TOOL_NAMES, TOOL_NAME_LENGTH);
}

/**
 * The tool name an operation asks for: its operationId made valid (`^[a-zA-Z0-9_-]{1,64}$`), else its method and
 * path (`get_pets_petId`).
 */
export function wantedToolName(method: string, path: string, operationId: string | undefined): string {
  const fromId = operationId === undefined ? '' : nameOf(operationId);
  if (fromId !== '') return fromId;
  return nameOf(`${method.toLowerCase()} ${path.replace(/[{}]/g, '')}`) || method.toLowerCase();
}

/** The per-tool allow list of actors (the full authorization ladder replaces it later). */
export class AllowList {
  constructor(private readonly allow: Readonly<Record<string, readonly string[]>>) {}

  allows(actor: string, tool: string): boolean {
    const actors = [...(this.allow[tool] ?? []), ...(this.allow['*'] ?? [])];
    return actors.includes('*') || actors.includes(actor);
  }
}

import { didYouMean } from './suggest';

/** What a `{{...}}` template in a request refers to. */
export type TemplateReference =
  /** `{{args.<name>}}` or `{{args.<object>.<field>}}`: an argument of the call. */
  | { readonly kind: 'argument'; readonly argument: string }
  /** `{{execution.id}}`: the execution id the gateway assigned (also the idempotency key). */
  | { readonly kind: 'execution_id' };

/** What a string of a section refers to: its templates, and what is wrong with them. */
export interface TemplateScan {
  /** The arguments and the execution id the templates name, in order. */
  readonly references: readonly TemplateReference[];
  /** Malformed or unknown templates, as reasons. */
  readonly problems: readonly string[];
  /** The reference when the whole string is exactly one template, e.g. `{{args.count}}`. */
  readonly whole: TemplateReference | undefined;
}

const TEMPLATE = /\{\{(.*?)\}\}/g;
const ARGUMENT = /^args\.([A-Za-z0-9_-]+(?:\.[A-Za-z0-9_-]+)*)$/;

/** The `{{…}}` templates of a string: `{{args.<name>}}` and `{{execution.id}}`, anything else a problem. */
export function scanTemplates(text: string): TemplateScan {
  const references: TemplateReference[] = [];
  const problems: string[] = [];
  for (const [raw, inner = ''] of text.matchAll(TEMPLATE)) {
    const expression = inner.trim();
    const argument = ARGUMENT.exec(expression);
    if (argument?.[1] !== undefined) references.push({ kind: 'argument', argument: argument[1] });
    else if (expression === 'execution.id') references.push({ kind: 'execution_id' });
    else {
      const head = expression.split('.')[0] ?? '';
      const hint = didYouMean(head, ['args', 'execution']);
      problems.push(`unknown template '${raw}'; use {{args.<name>}} or {{execution.id}}${hint}`);
    }
  }
  const rest = text.replace(TEMPLATE, '');
  if (rest.includes('{{') || rest.includes('}}')) problems.push(`unbalanced '{{' or '}}' in '${text}'`);
  const whole = references.length === 1 && problems.length === 0 && /^\{\{[^{}]*\}\}$/.test(text.trim()) ? references[0] : undefined;
  return { references, problems, whole };
}

/** True when the string holds a template (well formed or not). */
export function hasTemplate(text: string): boolean {
  return text.includes('{{') || text.includes('}}');
}

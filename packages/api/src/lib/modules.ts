import type { Options, TriggerDef } from '@mikro-orm/core';
import type { AnyRouter } from '@trpc/server';
import type { z } from 'zod';

/**
 * A registry a lower part owns and the modules above it fill (users' merge steps, the kernel's purge steps, …): the
 * owner declares it once, a module declaration lists its entries (`hooks`), the composition root composes them once
 * at start (`Hooks`), and the owner reads them at run time from `services.hooks` (or from the hooks handed to the
 * worker that runs them), so no module imports one above it and nothing registers itself at import time.
 */
export class Registry<T> {
  readonly name: string;
  /** At most one entry (a second is refused like a name declared twice). */
  readonly single: boolean;

  constructor(name: string, options: { single?: true } = {}) {
    this.name = name;
    this.single = options.single === true;
  }

  /** One entry of this registry, named (a name may be declared once per registry), for a module declaration. */
  entry(name: string, value: T): Hook {
    return { registry: this, name, value };
  }
}

/** An entry of some registry (`Registry.entry`), typed by the registry that made it. */
export interface Hook {
  readonly registry: Registry<unknown>;
  readonly name: string;
  readonly value: unknown;
}

/** Every registry's entries, composed once from the module list; refuses a name declared twice in one registry. */
export class Hooks {
  readonly #entries = new Map<Registry<unknown>, { names: Set<string>; values: unknown[] }>();

  constructor(hooks: Iterable<Hook>) {
    for (const { registry, name, value } of hooks) {
      const entries = this.#entries.get(registry) ?? { names: new Set<string>(), values: [] };
      if (entries.names.has(name)) throw new Error(`The ${registry.name} ${name} is declared twice`);
      if (registry.single && entries.names.size) throw new Error(`A second ${registry.name} is declared (${name})`);
      entries.names.add(name);
      entries.values.push(value);
      this.#entries.set(registry, entries);
    }
  }

  /** A registry's entries in the order the modules are listed (none when no module fills it). */
  get<T>(registry: Registry<T>): readonly T[] {
    // Entries reach the map only through `registry.entry(name, value: T)`, so a registry's values are its T.
    return (this.#entries.get(registry as Registry<unknown>)?.values ?? []) as readonly T[];
  }
}

/** A tree of procedures under their namespaces: a router is a leaf; a plain object is a namespace modules share. */
export interface ProcedureTree {
  readonly [key: string]: AnyRouter | AnyRouter['_def']['procedures'][string] | ProcedureTree;
}

/** The events a module emits: each kind with the schema of its `data` (a kind is declared by one module). */
export type EventDeclarations = Readonly<Record<string, z.ZodType>>;

/** The `data` of each declared kind as its schema gives it (what `recordEvent` takes, what a webhook delivers). */
export type EventPayloadsOf<E extends EventDeclarations> = { [K in keyof E]: z.output<E[K]> };

/** A module as the composition root lists it: its tables, its procedures, its OpenAPI tag and the registries it fills. */
export interface ModuleDeclaration<P extends ProcedureTree = ProcedureTree> {
  name: string;
  entities?: Exclude<Options['entities'], undefined>;
  /** Its procedures under their namespaces; a namespace may gather the procedures of several modules. */
  procedures?: P;
  /** The OpenAPI tag it owns (the tags of the document, in the order of the module list). */
  tag?: { name: string; description: string };
  hooks?: readonly Hook[];
  /** The events it emits, with their payload schemas. */
  events?: EventDeclarations;
  /** Triggers it puts on a lower module's table (webhooks fan out on events): applied to that entity at composition. */
  triggers?: ReadonlyArray<{ on: { meta: { triggers: TriggerDef[] } }; trigger: TriggerDef }>;
}

export const defineModule = <const P extends ProcedureTree = Record<never, never>>(module: ModuleDeclaration<P>) => module;

type UnionToIntersection<U> = (U extends unknown ? (u: U) => void : never) extends (i: infer I) => void ? I : never;

/** The procedures of every listed module, merged under their namespaces. */
export type MergedProcedures<M extends readonly ModuleDeclaration[]> = UnionToIntersection<
  { [K in keyof M]: M[K] extends ModuleDeclaration<infer P> ? P : never }[number]
>;

const isNamespace = (node: unknown): node is ProcedureTree => typeof node === 'object' && node !== null && !('_def' in node);

function mergeInto(target: Record<string, unknown>, tree: ProcedureTree, path: string): void {
  for (const [key, node] of Object.entries(tree)) {
    const at = path ? `${path}.${key}` : key;
    const existing = target[key];
    if (!isNamespace(node)) {
      if (existing !== undefined) throw new Error(`The procedure ${at} is declared twice`);
      target[key] = node;
      continue;
    }
    const namespace = existing === undefined ? {} : existing;
    if (!isNamespace(namespace)) throw new Error(`The procedure ${at} is declared twice`);
    target[key] = namespace;
    mergeInto(namespace, node, at);
  }
}

/**
 * The service as its modules declare it: every table, the procedures merged under their namespaces, the OpenAPI tags
 * the composed registries and every event kind with its payload schema. A module, tag, procedure, registry entry or
 * event kind declared twice throws here, at start.
 */
export function composeModules<const M extends readonly ModuleDeclaration[]>(modules: M) {
  const names = new Set<string>();
  const tags = new Set<string>();
  const procedures: Record<string, unknown> = {};
  const events: Record<string, z.ZodType> = {};
  for (const module of modules) {
    if (names.has(module.name)) throw new Error(`The module ${module.name} is listed twice`);
    names.add(module.name);
    if (module.tag && tags.has(module.tag.name)) throw new Error(`The OpenAPI tag ${module.tag.name} is declared twice`);
    if (module.tag) tags.add(module.tag.name);
    if (module.procedures) mergeInto(procedures, module.procedures, '');
    for (const [type, schema] of Object.entries(module.events ?? {})) {
      if (type in events) throw new Error(`The event ${type} is declared twice`);
      events[type] = schema;
    }
    for (const { on, trigger } of module.triggers ?? []) {
      if (on.meta.triggers.some(({ name }) => name === trigger.name))
        throw new Error(`The trigger ${trigger.name} is declared twice`);
      on.meta.triggers.push(trigger);
    }
  }
  return {
    entities: modules.flatMap((module) => module.entities ?? []),
    // The merge builds exactly the union of the declared trees (checked above), which is what this type says.
    procedures: procedures as MergedProcedures<M>,
    tags: modules.flatMap((module) => (module.tag ? [module.tag] : [])),
    hooks: new Hooks(modules.flatMap((module) => module.hooks ?? [])),
    events,
  };
}

import { AjvCompiler } from '@fastify/ajv-compiler';
import { SerializerSelector } from '@fastify/fast-json-stringify-compiler';
import type { FastifyServerOptions } from 'fastify';

type Factories = NonNullable<NonNullable<FastifyServerOptions['schemaController']>['compilersFactory']>;

/** What Fastify hands a compiler: the schema and where it is used. */
interface RouteSchema {
  schema: unknown;
  method?: string;
  url?: string;
}
type Validate = ((data: unknown, parent?: unknown) => unknown) & { errors?: unknown; schemaEnv?: unknown };
type Serialize = (doc: unknown) => string;

export interface SchemaCompilers {
  /** For Fastify's `schemaController.compilersFactory` option. */
  factories: Factories;
  /**
   * Compiles every validator and serializer not compiled yet, yielding to the event loop between
   * them so requests are answered meanwhile; resolves when none is left.
   */
  compileAll(): Promise<void>;
}

/**
 * Fastify's own compilers (Ajv for request bodies, fast-json-stringify for replies), each schema
 * compiled when it is first used rather than when the app starts. Compiling the ~300 schemas of
 * every route took most of the service's start-up (0.6–0.8 s of generated code); `serve` compiles
 * them just after it is ready (compileAll), so the first requests rarely pay. The compiled functions
 * are the ones Fastify would have made, from the same schemas and options, so requests are checked
 * and replies written exactly as before. A serializer is made once per schema object: the error
 * envelope is one object shared by every status code of every route.
 */
export function lazySchemaCompilers(): SchemaCompilers {
  const pending = new Set<() => unknown>();
  const buildAjv = AjvCompiler();
  const buildFjs = SerializerSelector();
  /** A compiled function made on its first call, and pending (for compileAll) until then. */
  const onFirstUse = <F>(make: () => F): (() => F) => {
    let fn: F | undefined;
    const force = () => {
      if (fn === undefined) {
        fn = make();
        pending.delete(force);
      }
      return fn;
    };
    pending.add(force);
    return force;
  };

  const buildValidator = (externalSchemas: Parameters<typeof buildAjv>[0], ajvOptions: Parameters<typeof buildAjv>[1]) => {
    // Its declared type is Ajv's compile; Fastify calls it, as it calls ours, with a RouteSchema.
    const compile = buildAjv(externalSchemas, ajvOptions) as unknown as (route: RouteSchema) => Validate;
    return (route: RouteSchema): Validate => {
      const force = onFirstUse(() => compile(route));
      // Fastify passes the parent object (so Ajv may replace the root value) only to a function
      // that has `schemaEnv`, as Ajv's own do; ours forwards it when the compiled one wants it.
      const validate: Validate = Object.assign(
        (data: unknown, parent?: unknown) => {
          const f = force();
          const result = f.schemaEnv ? f(data, parent) : f(data);
          validate.errors = f.errors;
          return result;
        },
        { errors: null as unknown, schemaEnv: true },
      );
      return validate;
    };
  };

  const buildSerializer = (externalSchemas: Parameters<typeof buildFjs>[0], serializerOptions: Parameters<typeof buildFjs>[1]) => {
    const compile = buildFjs(externalSchemas, serializerOptions) as (route: RouteSchema) => Serialize;
    const made = new WeakMap<object, Serialize>();
    return (route: RouteSchema): Serialize => {
      const key = typeof route.schema === 'object' && route.schema !== null ? route.schema : null;
      const shared = key ? made.get(key) : undefined;
      if (shared) return shared;
      const force = onFirstUse(() => compile(route));
      const serialize = (doc: unknown) => force()(doc);
      if (key) made.set(key, serialize);
      return serialize;
    };
  };

  return {
    // Fastify's declared compiler types are Ajv's and fast-json-stringify's own signatures; at run
    // time it calls both with a RouteSchema, as these take.
    factories: { buildValidator, buildSerializer } as unknown as Factories,
    async compileAll() {
      const turn = () => new Promise((resolve) => setImmediate(resolve));
      for (const force of pending) {
        await turn();
        force();
      }
    },
  };
}

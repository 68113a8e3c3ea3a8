import type { AnyProcedure, AnyRouter } from "@trpc/server";
import { z } from "zod";
import {
  acceptsRequestBody,
  coerceSchema,
  getInputOutputParsers,
  getPathRegExp,
  instanceofZodTypeLikeVoid,
  instanceofZodTypeObject,
  instanceofZodTypeOptional,
  normalizePath,
  unwrapZodType,
} from "trpc-to-openapi";
import { AppError } from "../errors";
import type { Context, Meta } from "./trpc";

/** How a REST operation gets its request: the JSON body (POST) or the query (GET), read by the HTTP edge. */
export interface RestRequest {
  ctx: Context;
  /** The path's parameters, from the one match of `pattern` (src/api/http.ts). */
  params: Record<string, string>;
  /** The parsed JSON body when the operation takes one; else undefined. */
  body: unknown;
  query: URLSearchParams;
  signal: AbortSignal;
}

/** One REST operation of the router, resolved once at start. */
export interface RestOperation {
  method: string;
  /** The OpenAPI path, parameters as `{name}` (`/api/messages/{phone}`): the route metrics name it by. */
  route: string;
  pattern: RegExp;
  /** Whether it reads a JSON body: a POST or PATCH whose input has fields besides the path's. */
  takesBody: boolean;
  /** The status of a success: 200, or 201 for a creation. */
  status: number;
  /** Runs the procedure through its middlewares (auth, input and output schemas) and answers its output. */
  call(request: RestRequest): Promise<unknown>;
}

/**
 * The REST face of the one router, built once: for every procedure with OpenAPI meta, its
 * route and how its input is assembled, as trpc-to-openapi's own adapter assembles it
 * (query values, a repeated name as an array, then the path's parameters, not URL-decoded;
 * query values coerced by the schema). Its adapter redid all of that on every request
 * and built a tRPC caller per request; here a request only matches its row and calls the
 * procedure. The OpenAPI document still comes from trpc-to-openapi (src/api/openapi.ts),
 * from the same meta. Rows keep the router's declaration order: the first match wins.
 */
export function restOperations(router: AnyRouter): RestOperation[] {
  return restProcedures(router).map(({ path, procedure, openapi, successStatus }) => operation(path, procedure, openapi.method, normalizePath(openapi.path), successStatus));
}

/** Every procedure with OpenAPI meta, in the router's order: its name, its meta's route and its success status. */
export function restProcedures(router: AnyRouter) {
  const found: { path: string; procedure: AnyProcedure; openapi: NonNullable<Meta["openapi"]>; successStatus: number }[] = [];
  for (const [path, procedure] of Object.entries(router._def.procedures as Record<string, AnyProcedure>)) {
    const meta = procedure._def.meta as Meta | undefined;
    const openapi = meta?.openapi;
    if (!openapi || openapi.enabled === false || procedure._def.type === "subscription") continue;
    found.push({ path, procedure, openapi, successStatus: meta?.successStatus ?? 200 });
  }
  return found;
}

const isJsonObject = (value: unknown) => typeof value === "object" && value !== null && !Array.isArray(value);
/** What a JSON value that is not an object is, for the 400 that refuses it. */
const jsonKind = (value: unknown) => (value === null ? "null" : Array.isArray(value) ? "an array" : `a ${typeof value}`);

function operation(path: string, procedure: AnyProcedure, method: string, route: string, status: number): RestOperation {
  const pattern = getPathRegExp(route);
  const type = procedure._def.type;
  const { inputParser } = getInputOutputParsers(procedure);
  const schema = unwrapZodType(inputParser as never, true);
  const takesInput = !instanceofZodTypeLikeVoid(schema);
  // Query values are strings: the schema coerces them (once, in place, as trpc-to-openapi does).
  const arrayFields: string[] = [];
  // GET and DELETE take their input from the query and path; the others from a JSON body and the path.
  const reading = !acceptsRequestBody(method as "GET");
  let takesBody = false;
  if (instanceofZodTypeObject(schema)) {
    const pathFields = [...route.matchAll(/\{(\w+)\}/g)].map((m) => m[1]);
    takesBody = !reading && Object.keys((schema as z.ZodObject).shape).some((field) => !pathFields.includes(field));
    for (const [field, shape] of Object.entries((schema as z.ZodObject).shape)) {
      const inner = instanceofZodTypeOptional(shape) ? (shape as z.ZodOptional).unwrap() : shape;
      if (inner instanceof z.ZodArray) arrayFields.push(field);
    }
    coerceSchema(schema as never);
  }

  return {
    method,
    route,
    pattern,
    takesBody,
    status,
    call({ ctx, params, body, query, signal }) {
      if (takesBody && body !== undefined && !isJsonObject(body)) throw new AppError("BAD_REQUEST", `body: must be a JSON object ({ … }), not ${jsonKind(body)}`);
      let input: Record<string, unknown> | undefined;
      if (takesInput) input = reading ? { ...queryFields(query, arrayFields), ...params } : { ...(body as object | undefined), ...params };
      return procedure({ ctx, path, type, getRawInput: async () => input, signal, batchIndex: 0 });
    },
  };
}

/** A query as an object: a name given once is a string, given again an array (always an array for an array field). */
function queryFields(query: URLSearchParams, arrayFields: string[]): Record<string, unknown> {
  // No prototype: a parameter named __proto__ or toString is just a name.
  const fields: Record<string, string | string[]> = Object.create(null);
  for (const [name, value] of query) {
    const seen = fields[name];
    if (seen === undefined) fields[name] = value;
    else if (Array.isArray(seen)) seen.push(value);
    else fields[name] = [seen, value];
  }
  for (const name of arrayFields) {
    const value = fields[name];
    if (value !== undefined && !Array.isArray(value)) fields[name] = [value];
  }
  return fields;
}

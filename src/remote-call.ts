import { TRPCClientError } from "@trpc/client";
import { AppError, type ErrorCode } from "./errors";

/**
 * A call to the Textwire server at TEXTWIRE_URL (`url` when known) through the typed client, failing as the in-process
 * caller fails: the server's refusal (404, 409, 422…) as an AppError with the same code and
 * message; a server that cannot be reached, or does not answer as Textwire, as 503.
 */
export async function remoteCall<T>(call: () => Promise<T>, url?: string): Promise<T> {
  try {
    return await call();
  } catch (err) {
    if (!(err instanceof TRPCClientError)) throw err;
    const code = (err.data as { code?: ErrorCode } | undefined)?.code;
    if (code) throw new AppError(code, err.message);
    throw new AppError("SERVICE_UNAVAILABLE", `TEXTWIRE_URL${url ? `: ${url}` : ""} could not be reached or did not answer as Textwire (${err.message}); retry later`);
  }
}

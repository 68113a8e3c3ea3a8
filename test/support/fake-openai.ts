/**
 * A small OpenAI-compatible server on 127.0.0.1 (POST /v1/chat/completions), standing in
 * for OpenAI, Ollama or vLLM. It records every request and answers as told.
 */
export type FakeReply =
  | { kind: "text"; text: string }
  | { kind: "status"; status: number }
  | { kind: "hang" };

export interface ChatRequest {
  model: string;
  messages: { role: string; content: string }[];
  authorization: string | null;
}

export function startFakeOpenAI(initial: FakeReply = { kind: "text", text: "Thanks, we will be in touch." }) {
  const requests: ChatRequest[] = [];
  let next: FakeReply | ((req: ChatRequest) => FakeReply | Promise<FakeReply>) = initial;
  const hanging = new Set<() => void>();

  const server = Bun.serve({
    port: 0,
    hostname: "127.0.0.1",
    idleTimeout: 0,
    async fetch(req) {
      const url = new URL(req.url);
      if (req.method !== "POST" || url.pathname !== "/v1/chat/completions") {
        return Response.json({ error: { message: "not found" } }, { status: 404 });
      }
      const body = (await req.json()) as { model: string; messages: { role: string; content: string }[] };
      const chat: ChatRequest = { model: body.model, messages: body.messages, authorization: req.headers.get("authorization") };
      requests.push(chat);
      const reply = typeof next === "function" ? await next(chat) : next;
      if (reply.kind === "hang") {
        // Never answers; released when the test stops the server.
        return new Promise<Response>((resolve) => hanging.add(() => resolve(new Response("", { status: 499 }))));
      }
      if (reply.kind === "status") {
        return Response.json({ error: { message: "upstream failure", type: "server_error" } }, { status: reply.status });
      }
      return Response.json({
        id: `chatcmpl-${requests.length}`,
        object: "chat.completion",
        created: Math.floor(Date.now() / 1000),
        model: body.model,
        choices: [{ index: 0, message: { role: "assistant", content: reply.text }, finish_reason: "stop" }],
        usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 },
      });
    },
  });

  return {
    /** For OPENAI_BASE_URL. */
    baseUrl: `http://127.0.0.1:${server.port}/v1`,
    requests,
    /** What to answer: a reply, or a function of the request (it may look around first, e.g. at a database). */
    reply(r: FakeReply | ((req: ChatRequest) => FakeReply | Promise<FakeReply>)) {
      next = r;
    },
    async stop() {
      for (const release of hanging) release();
      await server.stop(true);
    },
  };
}

import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import type { inferRouterOutputs } from "@trpc/server";
import { useId, useState, type FormEvent } from "react";
import type { AppRouter } from "../../api/router";
import { ConfirmDialog } from "../components/confirm-dialog";
import { ErrorAlert } from "../components/error-alert";
import { LocalTime } from "../components/local-time";
import { ShownOnce } from "../components/shown-once";
import { Table } from "../components/table";
import { useTRPC } from "../trpc";

type ApiKey = inferRouterOutputs<AppRouter>["keys"]["list"]["api_keys"][number];
type Scope = inferRouterOutputs<AppRouter>["system"]["info"]["scopes"][number];

/** What each scope opens (docs/security.md), in the order the server lists them. */
const SCOPE_TEXT: Record<Scope, string> = {
  "messages:read": "read history, conversations, contacts, events",
  "messages:send": "send, react, edit, cancel, create chats",
  "drafts:write": "write replies without sending",
  "drafts:approve": "approve drafts",
  "webhooks:manage": "webhook endpoints",
  "lines:manage": "lines",
  "workflows:manage": "run workflows, see runs",
  "keys:manage": "create, list and revoke keys",
};

/** API keys stored in the database, as `bun run textwire keys …` manages them (src/cli.ts). */
export function KeysPage() {
  return (
    <>
      <h1>Keys</h1>
      <p>API keys stored in the database. Keys from API_KEYS are not listed here.</p>
      <CreateKeyForm />
      <KeyTable />
    </>
  );
}

/** Refreshes the key table after a change. */
function useInvalidateKeys() {
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  return () => queryClient.invalidateQueries({ queryKey: trpc.keys.list.queryKey() });
}

/** The new key is in the answer to create only: shown here once, never stored by the browser. */
function CreateKeyForm() {
  const trpc = useTRPC();
  const invalidateKeys = useInvalidateKeys();
  const create = useMutation(trpc.keys.create.mutationOptions({ onSuccess: invalidateKeys }));
  const [name, setName] = useState("");
  // Every scope the session's key holds, by default: a key never gives more than it has.
  const info = useQuery(trpc.system.info.queryOptions());
  const own = info.data?.scopes ?? [];
  const [unchecked, setUnchecked] = useState<Scope[]>([]);
  const [knownOnly, setKnownOnly] = useState(false);
  const scopes = own.filter((scope) => !unchecked.includes(scope));
  // Kept apart from the mutation's state, so a failed second try does not hide a key not yet stored.
  const [created, setCreated] = useState<{ name: string; key: string } | null>(null);
  const nameId = useId();
  const hintId = useId();
  const submit = (event: FormEvent) => {
    event.preventDefault();
    const all = scopes.length === own.length && own.length === Object.keys(SCOPE_TEXT).length;
    create.mutate(
      { name, ...(all ? {} : { scopes }), ...(knownOnly ? { reach: "known" as const } : {}) },
      {
        onSuccess: ({ key, api_key }) => {
          setCreated({ name: api_key.name, key });
          setName("");
        },
      },
    );
  };
  return (
    <section aria-labelledby={`${nameId}-heading`}>
      <h2 id={`${nameId}-heading`}>New key</h2>
      <form onSubmit={submit}>
        <label htmlFor={nameId}>Name</label>
        <fieldset role="group">
          <input
            id={nameId}
            value={name}
            onChange={(e) => setName(e.target.value)}
            required
            autoComplete="off"
            aria-describedby={hintId}
            aria-invalid={create.isError ? true : undefined}
          />
          {/* An input, not a button: Pico's group keeps its label on one line. */}
          <input type="submit" value="Create key" aria-busy={create.isPending} disabled={create.isPending} />
        </fieldset>
        <small id={hintId}>1 to 64 letters, digits, "_" or "-", starting with a letter or digit.</small>
        <fieldset>
          <legend>Scopes: what the key may do</legend>
          {own.map((scope) => (
            <label key={scope}>
              <input
                type="checkbox"
                checked={!unchecked.includes(scope)}
                onChange={(e) => setUnchecked((now) => (e.target.checked ? now.filter((s) => s !== scope) : [...now, scope]))}
              />
              <code>{scope}</code> {SCOPE_TEXT[scope]}
            </label>
          ))}
          <label>
            <input type="checkbox" checked={knownOnly || info.data?.reach === "known"} disabled={info.data?.reach === "known"} onChange={(e) => setKnownOnly(e.target.checked)} />
            Only contacts who wrote first (reach: known)
          </label>
        </fieldset>
      </form>
      <ErrorAlert error={create.error} />
      {created && (
        <ShownOnce
          label={`Key ${created.name}`}
          value={created.key}
          note="Store it now: it is not shown again. Use it as Authorization: Bearer <key>."
          onDone={() => setCreated(null)}
        />
      )}
    </section>
  );
}

function KeyTable() {
  const trpc = useTRPC();
  const keys = useQuery(trpc.keys.list.queryOptions());
  const [revoking, setRevoking] = useState<string | null>(null);
  if (keys.isPending) return <p aria-busy="true">Loading keys…</p>;
  if (keys.isError) return <ErrorAlert error={keys.error} />;
  if (keys.data.api_keys.length === 0) return <p>No keys stored yet.</p>;
  return (
    <section>
      <h2>Stored keys</h2>
      <Table columns={["Name", "Prefix", "Scopes", "Limits", "Created", "Last used", "Revoked", "Actions"]}>
        {keys.data.api_keys.map((key) => (
          <KeyRow key={key.id} apiKey={key} onRevoke={() => setRevoking(key.name)} />
        ))}
      </Table>
      {revoking && <RevokeKeyDialog name={revoking} onClose={() => setRevoking(null)} />}
    </section>
  );
}

/** A row named by its key (`aria-label`), so each key's "Revoke" can be told apart. */
function KeyRow({ apiKey, onRevoke }: { apiKey: ApiKey; onRevoke: () => void }) {
  return (
    <tr aria-label={apiKey.name}>
      <th scope="row">{apiKey.name}</th>
      <td>
        <code>{apiKey.prefix}…</code>
      </td>
      <td>{apiKey.scopes.join(", ")}</td>
      <td>
        {[apiKey.lines ? `lines ${apiKey.lines.join(", ")}` : "", apiKey.reach === "known" ? "known contacts only" : "", apiKey.expires_at ? "expires" : ""].filter(Boolean).join("; ") || "None"}
        {apiKey.expires_at && (
          <>
            {" "}
            <LocalTime value={apiKey.expires_at} />
          </>
        )}
      </td>
      <td>
        <LocalTime value={apiKey.created_at} />
      </td>
      <td>{apiKey.last_used_at ? <LocalTime value={apiKey.last_used_at} /> : "Never"}</td>
      <td>{apiKey.revoked_at ? <LocalTime value={apiKey.revoked_at} /> : "Active"}</td>
      <td>
        {!apiKey.revoked_at && (
          <button type="button" className="secondary compact" onClick={onRevoke}>
            Revoke
          </button>
        )}
      </td>
    </tr>
  );
}

function RevokeKeyDialog({ name, onClose }: { name: string; onClose: () => void }) {
  const trpc = useTRPC();
  const invalidateKeys = useInvalidateKeys();
  const revoke = useMutation(trpc.keys.revoke.mutationOptions({ onSuccess: invalidateKeys }));
  return (
    <ConfirmDialog
      title={`Revoke key ${name}?`}
      confirmLabel="Revoke key"
      busy={revoke.isPending}
      error={revoke.error}
      onConfirm={() => revoke.mutate({ id: name }, { onSuccess: onClose })}
      onClose={onClose}
    >
      <p>It stops working at once, in every process, and console sessions signed in with it end. This cannot be undone.</p>
    </ConfirmDialog>
  );
}

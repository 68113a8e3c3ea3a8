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

type ApiKey = inferRouterOutputs<AppRouter>["keys"]["list"]["keys"][number];

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
  // Kept apart from the mutation's state, so a failed second try does not hide a key not yet stored.
  const [created, setCreated] = useState<{ name: string; key: string } | null>(null);
  const nameId = useId();
  const hintId = useId();
  const submit = (event: FormEvent) => {
    event.preventDefault();
    create.mutate(
      { name },
      {
        onSuccess: ({ key, info }) => {
          setCreated({ name: info.name, key });
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
  if (keys.data.keys.length === 0) return <p>No keys stored yet.</p>;
  return (
    <section>
      <h2>Stored keys</h2>
      <Table columns={["Name", "Prefix", "Created", "Revoked", "Actions"]}>
        {keys.data.keys.map((key) => (
          <KeyRow key={key.name + key.created_at} apiKey={key} onRevoke={() => setRevoking(key.name)} />
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
      <td>
        <LocalTime value={apiKey.created_at} />
      </td>
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
      onConfirm={() => revoke.mutate({ name }, { onSuccess: onClose })}
      onClose={onClose}
    >
      <p>It stops working at once, in every process, and console sessions signed in with it end. This cannot be undone.</p>
    </ConfirmDialog>
  );
}

import { useMutation } from "@tanstack/react-query";
import type { FormEvent } from "react";
import { useLocation } from "wouter";
import { ErrorAlert } from "../components/error-alert";
import { DialogButton, Modal } from "../components/modal";
import { useRefreshMessages } from "../live";
import { useTRPC } from "../trpc";
import { threadPath } from "./thread-path";
import { typedPhone } from "./typed-phone";

function NewMessageDialog({ onClose }: { onClose: () => void }) {
  const trpc = useTRPC();
  const refresh = useRefreshMessages();
  const [, navigate] = useLocation();
  const send = useMutation(
    trpc.messages.send.mutationOptions({
      onSuccess: (_answer, input) => {
        refresh();
        onClose();
        navigate(threadPath(input.phone!));
      },
    }),
  );
  const submit = (event: FormEvent<HTMLFormElement>) => {
    event.preventDefault();
    const form = new FormData(event.currentTarget);
    if (!send.isPending) send.mutate({ phone: typedPhone(String(form.get("phone"))), message: String(form.get("message")) });
  };
  return (
    <Modal title="New message" onClose={onClose}>
      <form onSubmit={submit}>
        <label>
          Phone
          <input name="phone" type="tel" autoComplete="off" placeholder="+14155550123" required />
        </label>
        <label>
          Message
          <input name="message" autoComplete="off" required />
        </label>
        <ErrorAlert error={send.error} />
        <button type="submit" aria-busy={send.isPending}>
          Send
        </button>
      </form>
    </Modal>
  );
}

/** Button "New message": a dialog to write to any number, then its thread. */
export function NewMessage() {
  return <DialogButton label="New message" dialog={(close) => <NewMessageDialog onClose={close} />} />;
}

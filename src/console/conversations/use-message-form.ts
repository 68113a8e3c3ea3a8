import { useMutation, type UseMutationOptions } from "@tanstack/react-query";
import { useState, type FormEvent } from "react";
import { useRefreshMessages } from "../live";

/**
 * A one-field message form about one conversation (the Composer, Simulate inbound): the text,
 * and a submit that calls the mutation with `{ ...to, message }` (`to`: `{ phone }` or a
 * group's `{ chat_id }`) unless a call is under way. `options` gets the mutation's
 * onSuccess: it empties the field and refreshes the messages.
 */
export function useMessageForm<TData, TError, To extends { phone: string } | { chat_id: string }>(
  to: To,
  options: (callbacks: { onSuccess: () => void }) => UseMutationOptions<TData, TError, To & { message: string }>,
) {
  const refresh = useRefreshMessages();
  const [text, setText] = useState("");
  const mutation = useMutation(
    options({
      onSuccess: () => {
        setText("");
        refresh();
      },
    }),
  );
  const submit = (event: FormEvent) => {
    event.preventDefault();
    if (!mutation.isPending) mutation.mutate({ ...to, message: text });
  };
  return { text, setText, mutation, submit };
}

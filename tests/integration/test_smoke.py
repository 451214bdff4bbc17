from tests.support.api import Api


def test_create_store_read(api: Api) -> None:
    mind = api.create_mind()
    created = api.store(mind)
    assert created.status == 201, created.text
    memory = created.json()
    got = api.call("GET", f"/memory/{memory['id']}", token=mind.key)
    assert got.status == 200, got.text
    assert got.json()["content"] == "Lives in Berlin"
    again = api.store(mind, as_agent=True, content="Lives in Hamburg")
    assert again.status == 200, again.text
    assert again.json()["version"] == 2 and again.json()["verified"] is False
